"""Every `firmsift` command the parser knows is in the dispatch table, and nothing else is."""

from __future__ import annotations

import argparse

from firmsift.entrypoints.cli.commands import COMMANDS
from firmsift.entrypoints.cli.main import build_parser

RUN_BY_MAIN = {"classify"}  # an HTTP client of a firmsift service: main.py runs it without the wiring


def test_the_table_holds_every_command_of_the_parser() -> None:
    subcommands = next(action for action in build_parser()._actions if isinstance(action, argparse._SubParsersAction))

    assert set(COMMANDS) == set(subcommands.choices) - RUN_BY_MAIN

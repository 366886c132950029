"""The error a `firmsift` command raises when it cannot do its work (cli.py reports it: exit 1)."""

from __future__ import annotations


class CommandError(RuntimeError):
    """A command could not do its work; the message says why (exit code 1)."""

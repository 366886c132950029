"""The human answers' CSV, on the in-memory graph: what `firmsift answers list --csv`, GET
/answers?format=csv and the web app's export write is what `firmsift answers import` reads back
as the very same answers, whatever the notes start with: importing our own export changes
nothing and adds nothing to undo."""

from __future__ import annotations

import asyncio
import csv
import io
from pathlib import Path

import pytest

from firmsift.adapters.files.classifiers import load_catalog
from firmsift.adapters.memory.human_answers import InMemoryHumanAnswers
from firmsift.domain.spreadsheet_cells import FORMULA_STARTS
from firmsift.entrypoints.cli.answer_commands import run_answers
from firmsift.entrypoints.cli.main import build_parser
from firmsift.entrypoints.wiring.container import Container
from firmsift.entrypoints.http.answers import human_answer_csv_lines
from firmsift.entrypoints.wiring.memory import in_memory_container
from firmsift.entrypoints.settings import Settings
from firmsift.services.human_answers import correct_answer

# Notes a spreadsheet would run, notes that start like an escaped one, and harmless apostrophes.
NOTES = (
    '=HYPERLINK("http://evil.example","click")',
    "'=HYPERLINK(\"http://evil.example\")",
    "+1 555 0100 is their line",
    "-5% margin: a bank",
    "@acme on every label",
    "''@quoted twice",
    "'tis a bank",
    "'",
    "sells soap\r\n=1+1 on the next line",
)


def answers(container: Container, *args: str) -> int:
    return run_answers(container.admin(), build_parser().parse_args(["answers", *args]))


@pytest.fixture
def container() -> Container:
    container = in_memory_container(Settings())
    for number, note in enumerate(NOTES):
        asyncio.run(correct_answer(f"n{number}.com", "cpg", number % 2 == 0, note, corrected_by=None,
                                   catalog=load_catalog(None), store=container.human_answers()))
    return container


def test_importing_our_own_export_changes_nothing(container: Container, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    store: InMemoryHumanAnswers = container.human_answers()
    before = dict(store.current)
    history = {key: list(replaced) for key, replaced in store.replaced.items()}
    assert answers(container, "list", "--csv") == 0
    exported = capsys.readouterr().out

    rows = list(csv.DictReader(io.StringIO(exported, newline="")))
    assert not any(cell.startswith(FORMULA_STARTS) for row in rows for cell in row.values())
    assert rows[0]["note"] == '\'=HYPERLINK("http://evil.example","click")'
    assert rows[1]["note"] == "''=HYPERLINK(\"http://evil.example\")"
    assert rows[6]["note"] == "'tis a bank"  # nothing a spreadsheet would run: written as it is

    (tmp_path / "exported.csv").write_text(exported, encoding="utf-8", newline="")
    assert answers(container, "import", str(tmp_path / "exported.csv")) == 0
    assert f"imported 0 human answer(s), {len(NOTES)} unchanged; 0 row(s) rejected" in capsys.readouterr().out
    assert store.current == before
    assert store.replaced == history  # nothing more to undo


def test_the_api_and_the_web_app_export_what_the_command_line_does(container: Container,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    async def lines() -> str:
        return "".join([line async for line in human_answer_csv_lines(container.human_answers(), None, None)])

    assert answers(container, "list", "--csv") == 0
    assert asyncio.run(lines()) == capsys.readouterr().out

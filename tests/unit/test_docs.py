"""The reference pages of the documentation site stay true to the code: each generated page is what
`python -m docs.generate` would write now (a stale page fails), and together they cover every
setting with its default, every command, every route, every exit code and every error code."""

from __future__ import annotations

import re
from pathlib import Path

from docs import generate
from firmsift.entrypoints.cli.main import build_parser
from firmsift.entrypoints.settings import Settings

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "docs" / "reference"


def page(name: str) -> str:
    return (REFERENCE / name).read_text(encoding="utf-8")


def test_no_generated_page_is_stale() -> None:
    stale = generate.stale_pages()
    assert stale == [], f"run .venv/bin/python -m docs.generate (./dev docs does) and commit: {stale} changed"


def test_every_setting_is_documented_with_its_default_and_no_other() -> None:
    settings = page("settings.md").split("\n## Other", 1)[0]
    documented = set(re.findall(r"^\| `FIRMSIFT_([A-Z_]+)` \|", settings, flags=re.MULTILINE))
    assert documented == {name.upper() for name in Settings.model_fields}
    for name, field in Settings.model_fields.items():
        row = re.search(rf"^\| `FIRMSIFT_{name.upper()}` \| ([^|]+) \|", settings, flags=re.MULTILINE)
        assert row, name
        cell = row.group(1).strip().strip("`")
        if field.default is None:
            assert cell == "—", (name, cell)
        else:
            expected = str(field.default).lower() if isinstance(field.default, bool) else str(field.default)
            assert cell in (expected, expected.removesuffix(".0")), (name, cell, expected)


def test_every_command_and_subcommand_has_its_section() -> None:
    cli = page("cli.md")
    commands = generate.command_paths(build_parser())
    assert "firmsift keys create" in commands and "firmsift db sql" in commands
    for command in commands:
        assert re.search(rf"^#+ `{re.escape(command)}`$", cli, flags=re.MULTILINE), command


def test_every_route_of_the_openapi_document_has_its_section() -> None:
    http = page("http-api.md")
    for path, operations in generate.openapi()["paths"].items():
        for method in operations:
            assert f"## `{method.upper()} {path}`" in http, (method, path)


def test_every_exit_code_and_error_code_has_its_row() -> None:
    exits, errors = page("exit-codes.md"), page("error-codes.md")
    for name, value in generate.exit_codes().items():
        assert f"| {value} | `{name}` |" in exits, name
    codes = generate.scanned_error_codes()
    for code in ("invalid_domains", "budget_exhausted", "malformed_json", "bad_start", "too_many_connections",
                 "host_not_allowed", "database_read_only", "not_found"):
        assert code in codes, code  # the scan still finds each way a code is written
    for code in codes:
        assert f"| `{code}` |" in errors, code


def test_a_note_for_a_name_the_code_does_not_have_is_refused() -> None:
    notes = generate.load_notes()
    notes["settings"]["no_such_setting"] = "a setting that was removed"
    try:
        generate.settings_page(notes)
    except generate.NotesError as error:
        assert "no_such_setting" in str(error)
    else:
        raise AssertionError("a note for an unknown setting was accepted")


def test_the_readme_leads_to_the_settings() -> None:
    # `firmsift --help` and the unknown-variable warning send people to the README for the settings.
    assert "docs/reference/settings.md" in (REPO / "README.md").read_text(encoding="utf-8")

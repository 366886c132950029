"""The README stays true to the code: every setting documented with its default, every command listed."""

import re
from pathlib import Path

from firmsift.entrypoints.cli.main import build_parser
from firmsift.entrypoints.settings import Settings

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
SETTINGS_SECTION = README.split("## Settings", 1)[1].split("\n## ", 1)[0]


def test_every_setting_is_documented_and_no_other() -> None:
    documented = set(re.findall(r"^\| `FIRMSIFT_([A-Z_]+)` \|", SETTINGS_SECTION, flags=re.MULTILINE))
    assert documented == {name.upper() for name in Settings.model_fields}


def test_documented_defaults_match_the_code() -> None:
    for name, field in Settings.model_fields.items():
        row = re.search(rf"^\| `FIRMSIFT_{name.upper()}` \| ([^|]+) \|", SETTINGS_SECTION, flags=re.MULTILINE)
        assert row, name
        cell = row.group(1).strip().strip("`")
        if field.default is None:
            assert cell in ("—",) or cell.startswith("<"), (name, cell)
        else:
            expected = str(field.default).lower() if isinstance(field.default, bool) else str(field.default)
            assert cell in (expected, expected.removesuffix(".0")), (name, cell, expected)


def test_every_command_is_in_the_readme() -> None:
    commands = build_parser()._subparsers._group_actions[0].choices  # noqa: SLF001
    for command in commands:
        assert f"firmsift {command}" in README, command

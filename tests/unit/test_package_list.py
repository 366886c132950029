"""pyproject.toml lists firmsift's packages one by one (the tree under src/ is installed as
`firmsift`); a sub-package left off that list is missing from the wheel and the Docker image,
though an editable install still finds it. Every directory of src/ holding an __init__.py must be
listed, and nothing listed may be missing."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_every_package_under_src_is_in_the_wheel() -> None:
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    src = REPO / "src"
    present = {".".join(("firmsift", *init.parent.relative_to(src).parts)) for init in src.rglob("__init__.py")}
    assert present - listed == set(), "packages under src/ missing from pyproject.toml's list"
    assert listed - present == set(), "packages listed in pyproject.toml with no __init__.py under src/"

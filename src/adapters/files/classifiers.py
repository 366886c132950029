"""Loads classifier declarations (TOML files) from the package and an optional extra folder."""

from __future__ import annotations

import re
import tomllib
from importlib import resources
from pathlib import Path

from firmsift.domain.model import Classifier

_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,39}$")
_FIELD = re.compile(r"^[a-z_][a-z0-9_]{0,39}$")
_REQUIRED = ("name", "question", "answer_field", "definition", "system_prompt", "user_prompt", "prompt_version")


class ClassifierFileError(ValueError):
    """A classifier file is unreadable or incomplete; the message names the file and the problem."""


def load_catalog(extra_dir: Path | None = None) -> dict[str, Classifier]:
    """Every classifier: the packaged ones, then those in extra_dir (which may override by name)."""
    catalog: dict[str, Classifier] = {}
    packaged = resources.files("firmsift.classifiers")
    for entry in sorted(packaged.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            _add(catalog, entry.name, entry.read_text(encoding="utf-8"))
    if extra_dir is not None:
        if not extra_dir.is_dir():
            raise ClassifierFileError(f"classifiers folder {extra_dir} does not exist")
        for path in sorted(extra_dir.glob("*.toml")):
            _add(catalog, str(path), path.read_text(encoding="utf-8"))
    return catalog


def _add(catalog: dict[str, Classifier], source: str, content: str) -> None:
    classifier = parse_classifier(source, content)
    catalog[classifier.name] = classifier


def parse_classifier(source: str, content: str) -> Classifier:
    try:
        data = tomllib.loads(content)
    except tomllib.TOMLDecodeError as error:
        raise ClassifierFileError(f"{source}: not valid TOML: {error}") from None
    missing = [key for key in _REQUIRED if not isinstance(data.get(key), str) or not data[key].strip()]
    if missing:
        raise ClassifierFileError(f"{source}: missing or empty text fields: {', '.join(missing)}")
    if not _NAME.match(data["name"]):
        raise ClassifierFileError(f"{source}: name {data['name']!r} must be lowercase letters, digits, - or _")
    if not _FIELD.match(data["answer_field"]):
        raise ClassifierFileError(f"{source}: answer_field {data['answer_field']!r} must be a lowercase identifier")
    if "$evidence" not in data["user_prompt"] or "$domain" not in data["user_prompt"]:
        raise ClassifierFileError(f"{source}: user_prompt must contain $domain and $evidence")
    uses_known = data.get("uses_known_companies", False)
    if not isinstance(uses_known, bool):
        raise ClassifierFileError(f"{source}: uses_known_companies must be true or false")
    return Classifier(**{key: data[key].strip() for key in _REQUIRED}, uses_known_companies=uses_known)

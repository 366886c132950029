"""`firmsift eval` inputs: the labels CSV and the candidates file, checked whole before anything runs."""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from firmsift.domain.evaluation import LabelledDomain
from firmsift.domain.normalize import DomainRejected, normalize_domain
from firmsift.domain.search_providers import InvalidSearchProviders, chain_name, parse_search_providers
from firmsift.entrypoints.files.csv_files import read_csv_records

_YES, _NO = frozenset({"yes", "y", "true", "1"}), frozenset({"no", "n", "false", "0"})
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,59}$")
_SHOWN_PROBLEMS = 20


class EvalInputError(ValueError):
    """A labels or candidates file cannot be used; the message lists every problem found."""


def read_labels(path: Path) -> list[LabelledDomain]:
    """Every row, normalized, in file order. Any bad row fails the whole file: scoring on part of
    a labelled set would quietly change what the figures mean."""
    labels: list[LabelledDomain] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for line, record in read_csv_records(path, ("domain", "label")):
        raw, label = record.get("domain", ""), record.get("label", "").lower()
        try:
            domain = normalize_domain(raw)
        except DomainRejected as rejected:
            problems.append(f"line {line}: domain {raw!r} {rejected}")
            continue
        if label not in _YES | _NO:
            problems.append(f"line {line}: label {record.get('label', '')!r} for {domain} must be yes or no")
            continue
        if domain in seen:
            problems.append(f"line {line}: {domain} is labelled twice (first on line {seen[domain]})")
            continue
        seen[domain] = line
        labels.append(LabelledDomain(domain, label in _YES, record.get("notes", "")))
    if problems:
        raise EvalInputError(_listing(path, problems))
    if not labels:
        raise EvalInputError(f"{path}: no labelled domains")
    return labels


@dataclass(frozen=True)
class CandidateDeclaration:
    """One candidate as its file declares it; what is left out comes from the settings."""

    name: str
    model: str | None = None
    api_base: str | None = None
    api_key_env: str | None = None  # the NAME of a variable holding the key: keys never sit in the file
    classifier: str | None = None
    classifier_file: Path | None = None  # an experimental prompt, relative to the candidates file
    search: str | None = None
    max_tokens: int | None = None
    input_cost_per_million: float | None = None  # USD per million prompt tokens (overrides litellm's map)
    output_cost_per_million: float | None = None


_KEYS = {"name": str, "model": str, "api_base": str, "api_key_env": str, "classifier": str,
         "classifier_file": str, "search": str, "max_tokens": int,
         "input_cost_per_million": (int, float), "output_cost_per_million": (int, float)}


def read_candidates(path: Path) -> list[CandidateDeclaration]:
    """The `[[candidate]]` tables of a TOML file, every problem reported at once."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, IsADirectoryError):
        raise EvalInputError(f"{path}: no such file") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise EvalInputError(f"{path}: not valid TOML: {error}") from None
    tables = data.get("candidate")
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        raise EvalInputError(f"{path}: declare at least one [[candidate]] table")
    problems: list[str] = []
    candidates = [_candidate(path, number, table, problems) for number, table in enumerate(tables, start=1)]
    names = [c.name for c in candidates]
    problems += [f"candidate name {name!r} is used twice" for name in sorted({n for n in names if names.count(n) > 1})]
    if problems:
        raise EvalInputError(_listing(path, problems))
    return candidates


def _candidate(path: Path, number: int, table: dict[str, Any], problems: list[str]) -> CandidateDeclaration:
    where = f"candidate {number}"
    for key in sorted(set(table) - set(_KEYS)):
        problems.append(f"{where}: unknown key {key!r} (known: {', '.join(_KEYS)})")
    for key, kind in _KEYS.items():
        if key in table and (not isinstance(table[key], kind) or isinstance(table[key], bool)):
            problems.append(f"{where}: {key} has the wrong type ({type(table[key]).__name__})")
    values = {key: table[key] for key in _KEYS if key in table and isinstance(table[key], _KEYS[key])}
    for key in sorted(k for k, v in values.items() if isinstance(v, str) and not v.strip() and k != "name"):
        problems.append(f"{where}: {key} is empty (leave it out to use the setting)")
    if "api_base" in values and not re.match(r"^https?://[^/\s]+", values["api_base"]):
        problems.append(f"{where}: api_base {values['api_base']!r} must be an http:// or https:// URL")
    name = values.get("name", "")
    if not _NAME.match(name):
        problems.append(f"{where}: name {name!r} must be 1-60 letters, digits, '.', '_' or '-'")
    if "classifier" in values and "classifier_file" in values:
        problems.append(f"{where}: give classifier or classifier_file, not both")
    if values.get("search") is not None:
        try:  # one provider or a chain, as FIRMSIFT_SEARCH_PROVIDER takes them
            values["search"] = chain_name(parse_search_providers(values["search"]))
        except InvalidSearchProviders as error:
            problems.append(f"{where}: search {values['search']!r}: {error}")
    if ("input_cost_per_million" in values) != ("output_cost_per_million" in values):
        problems.append(f"{where}: give both input_cost_per_million and output_cost_per_million, or neither")
    prices = [values[k] for k in ("input_cost_per_million", "output_cost_per_million") if k in values]
    if any(not math.isfinite(price) or price < 0 for price in prices):
        problems.append(f"{where}: prices must be finite and not negative")
    if "max_tokens" in values and values["max_tokens"] < 16:
        problems.append(f"{where}: max_tokens must be at least 16")
    if "classifier_file" in values:
        values["classifier_file"] = (path.parent / values["classifier_file"]).resolve()
    for key in ("input_cost_per_million", "output_cost_per_million"):
        if key in values:
            values[key] = float(values[key])
    return CandidateDeclaration(**{"name": name, **{k: v for k, v in values.items() if k != "name"}})


def _listing(path: Path, problems: list[str]) -> str:
    shown = problems[:_SHOWN_PROBLEMS]
    more = f"\n  ... and {len(problems) - len(shown)} more" if len(problems) > len(shown) else ""
    return f"{path}: {len(problems)} problem(s):\n" + "\n".join(f"  {p}" for p in shown) + more

"""Warnings for FIRMSIFT_* environment variables that no setting reads, with the nearest known name."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

from firmsift.entrypoints.settings import CONFIG_FILE_VARIABLE, Settings

PREFIX = "FIRMSIFT_"
# FIRMSIFT_* variables read by something other than the settings, documented in docs/reference/settings.md.
OTHER_VARIABLES = {
    CONFIG_FILE_VARIABLE: "the TOML settings file",
    "FIRMSIFT_API_KEY": "the API key `firmsift classify` sends",
    "FIRMSIFT_VENV": "./dev: where it creates the virtual environment",
    "FIRMSIFT_TEST_POSTGRES_URL": "tests: the PostgreSQL server to use",
    "FIRMSIFT_CHROMIUM": "tests: the Chromium that checks the evaluation report",
    "FIRMSIFT_CHAOS_SEED": "tests: replays a chaos run of tests/e2e/test_faults_kill.py or test_classify_big_list.py",
    "FIRMSIFT_BIG_LIST_ROWS": "tests: rows of tests/e2e/test_classify_big_list.py's list (20,000; 2,000 or more)",
    "FIRMSIFT_TEST_WORKERS": "./dev test: how many pytest-xdist processes run the suite",
}


def known_variables() -> frozenset[str]:
    """Every FIRMSIFT_* name firmsift or its tooling reads."""
    return frozenset(PREFIX + name.upper() for name in Settings.model_fields) | frozenset(OTHER_VARIABLES)


def unknown_variable_warnings(environ: Mapping[str, str], known: Iterable[str] | None = None) -> list[str]:
    """One warning per FIRMSIFT_* variable (any case, as the settings read them) that nothing reads,
    naming the nearest known name when one is close: a typo is otherwise silently ignored."""
    names = sorted(known if known is not None else known_variables())
    warnings = []
    for variable in sorted(environ):
        upper = variable.upper()
        if not upper.startswith(PREFIX) or upper in names:
            continue
        nearest = difflib.get_close_matches(upper, names, n=1, cutoff=0.75)
        hint = f" (did you mean {nearest[0]}?)" if nearest else " (docs/reference/settings.md lists the settings)"
        warnings.append(f"{variable} is not a firmsift setting and is ignored{hint}")
    return warnings

"""bench.batch_profile runs the batch path in one process on either backend, and its digest of the
result lines is the same on both: the same ids, the same bytes."""

from __future__ import annotations

import re

import pytest

from bench.batch_profile import main
from tests.support.databases import SQL_BACKENDS

pytestmark = pytest.mark.e2e


def test_the_batch_profile_gives_the_same_lines_on_either_backend(capsys: pytest.CaptureFixture[str]) -> None:
    digests = []
    for backend in SQL_BACKENDS:
        assert main(["--backend", backend, "--domains", "120"]) == 0
        out = capsys.readouterr().out
        assert "120 domains accepted" in out and "120 rows" in out
        digests.append(re.search(r"sha256 ([0-9a-f]{16})", out)[1])
    assert digests[0] == digests[1]


def test_the_profile_sees_the_work_done_in_transactions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--domains", "50", "--profile"]) == 0
    out = capsys.readouterr().out
    assert "Ordered by: internal time" in out
    assert "executemany" in out  # the intake's inserts, which run in a worker thread unless profiled

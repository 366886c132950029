"""The batch path of `firmsift classify --csv` on a fake API: batches split when too large, one
Idempotency-Key per rows covered, results mapped onto rows as the jobs path would, a resume that
downloads from the first unwritten row, and the one progress line."""

from __future__ import annotations

import copy
import io
from collections.abc import Iterator
from typing import Any

import pytest

from firmsift.entrypoints.cli.batch_state import RunState, load_state, save_state
from firmsift.entrypoints.cli.classify_batches import submit_batches, wait_for_batches, write_results
from firmsift.entrypoints.cli.classify_client import Tally
from firmsift.entrypoints.cli.classify_report import BatchProgress
from firmsift.entrypoints.cli.classify_rows import Row, read_row
from firmsift.ports.jobs_api import BatchRefused, ClientError


class FakeBatches:
    """Batches answered at once: each domain DONE, but `cancelled` ones CANCELLED and `refused` ones REJECTED;
    refuses (413) a batch of more than `max_domains` unique domains. Records each call."""

    def __init__(self, max_domains: int = 100, cancelled: frozenset[str] = frozenset(),
                 refused: frozenset[str] = frozenset()) -> None:
        self.max_domains, self.cancelled, self.refused = max_domains, cancelled, refused
        self.batches: dict[str, list[str]] = {}
        self.keys: list[str] = []
        self.downloads: list[tuple[str, int]] = []

    def submit_batch(self, domains: list[str], idempotency_key: str) -> str:
        if len(set(domains)) > self.max_domains:
            raise BatchRefused("too many domains")
        self.keys.append(idempotency_key)
        batch_id = f"b{len(self.batches)}"
        self.batches[batch_id] = domains
        return batch_id

    def batch(self, batch_id: str) -> dict[str, Any]:
        unique = len(set(self.batches[batch_id]))
        return {"batch_id": batch_id, "total": unique, "pending": 0}

    def batch_results(self, batch_id: str, start: int) -> Iterator[dict[str, Any]]:
        self.downloads.append((batch_id, start))
        for domain in self.batches[batch_id][start:]:
            status = "CANCELLED" if domain in self.cancelled else "REJECTED" if domain in self.refused else "DONE"
            yield {"classified_domain": domain, "status": status, "answer": status == "DONE", "cost_usd": 0.5,
                   "job_id": f"job-{batch_id}", "error": "no" if status == "REJECTED" else None}


class Writer:
    def __init__(self) -> None:
        self.rows: list[Row] = []

    def write(self, row: Row) -> None:
        self.rows.append(row)


def rows(*cells: str) -> list[Row]:
    return [read_row(line, [cell], 1, 0) for line, cell in enumerate(cells, start=2)]


CELLS = ("a.com", "", "b.com", "a.com", "c.com", "d.com")


def test_a_batch_the_api_finds_too_large_is_halved_and_each_key_names_its_rows() -> None:
    api, state = FakeBatches(max_domains=2), RunState("run", "file")
    saved: list[int] = []
    submit_batches(api, rows(*CELLS), state, lambda s: saved.append(len(s.chunks)), rows_per_batch=6)
    # 6 rows with 4 domains refused: 3 rows; then 3 rows with 3 domains refused: 1 row a batch
    assert [(c.start, c.rows) for c in state.chunks] == [(0, 3), (3, 1), (4, 1), (5, 1)]
    assert list(api.batches.values()) == [["a.com", "b.com"], ["a.com"], ["c.com"], ["d.com"]]
    # The state is saved before a batch of a new size is sent (6, 3, then 1 row), and after each batch.
    assert saved == [0, 0, 1, 1, 2, 3, 4]
    again = FakeBatches(max_domains=2)
    submit_batches(again, rows(*CELLS), RunState("run", "file"), lambda s: None, rows_per_batch=6)
    assert again.keys == api.keys and len(set(api.keys)) == len(api.keys)  # the same rows: the same key
    other = FakeBatches(max_domains=2)
    submit_batches(other, rows(*CELLS), RunState("run", "another file"), lambda s: None, rows_per_batch=6)
    assert not set(other.keys) & set(api.keys)


class StoppedAfterTheApiAccepted(Exception):
    """The client died after the API accepted a batch and before it heard so."""


def test_a_run_stopped_before_it_heard_a_batch_was_accepted_sends_the_same_batch_again() -> None:
    """The halved size is saved before the batch is sent: a rerun sends the same rows under the same key
    (the API answers with the batch it has), not a batch of another size that covers them a second time."""
    api, state = FakeBatches(max_domains=2), RunState("run", "file")
    saved: list[RunState] = []
    accept = api.submit_batch

    def accept_then_stop(domains: list[str], idempotency_key: str) -> str:
        accept(domains, idempotency_key)
        raise StoppedAfterTheApiAccepted

    api.submit_batch = accept_then_stop  # type: ignore[method-assign]
    with pytest.raises(StoppedAfterTheApiAccepted):
        submit_batches(api, rows(*CELLS), state, lambda s: saved.append(copy.deepcopy(s)), rows_per_batch=6)
    resumed = saved[-1]
    assert (resumed.chunks, resumed.rows_per_batch) == ([], 3)
    again = FakeBatches(max_domains=2)
    submit_batches(again, rows(*CELLS), resumed, lambda s: None, rows_per_batch=6)
    assert again.keys[0] == api.keys[0]  # the batch in flight, by its key: the API replays it


def test_a_refused_batch_of_one_domain_stops_the_run() -> None:
    with pytest.raises(ClientError, match="refused a batch of one domain"):
        submit_batches(FakeBatches(max_domains=0), rows("a.com"), RunState("run", "file"), lambda s: None)


def test_results_are_written_row_for_row_and_a_resume_downloads_from_the_first_unwritten_row() -> None:
    api = FakeBatches(cancelled=frozenset({"c.com"}), refused=frozenset({"d.com"}))
    state = RunState("run", "file")
    submit_batches(api, rows(*CELLS), state, lambda s: None, rows_per_batch=4)
    writer = Writer()
    tally = write_results(api, rows(*CELLS), state, writer, lambda r, t: None, lambda s, now: None)
    assert [(r.cell, r.status) for r in writer.rows] == [
        ("a.com", "DONE"), ("", "REJECTED"), ("b.com", "DONE"), ("a.com", "DONE"), ("c.com", "FAILED"),
        ("d.com", "REJECTED")]
    assert writer.rows[4].result["error"] == "the batch ended with this domain CANCELLED"
    assert writer.rows[5].error == "refused by the API: no"
    assert writer.rows[3].job_id == "job-b0"
    # a.com twice in one batch costs once; c.com (failed) is counted too
    assert (tally.answered, tally.failed, tally.rejected, tally.cost_usd) == (3, 1, 2, 1.5)

    resumed = RunState("run", "file", state.chunks, written=3, tally=Tally(answered=2, rejected=1, cost_usd=1.0))
    api.downloads.clear()
    writer = Writer()
    tally = write_results(api, rows(*CELLS), resumed, writer, lambda r, t: None, lambda s, now: None)
    assert [r.cell for r in writer.rows] == ["a.com", "c.com", "d.com"]
    assert api.downloads == [("b0", 2), ("b1", 0)]  # from row 3: the third line of the first batch
    assert (tally.answered, tally.cost_usd) == (3, 1.5)  # a.com was counted before the stop


def test_a_download_that_breaks_off_saves_what_is_written_and_a_changed_input_is_refused() -> None:
    class Breaking(FakeBatches):
        def batch_results(self, batch_id: str, start: int) -> Iterator[dict[str, Any]]:
            yield from list(super().batch_results(batch_id, start))[:1]
            raise ClientError("broke off")

    api, state = Breaking(), RunState("run", "file")
    submit_batches(api, rows(*CELLS), state, lambda s: None)
    saves: list[tuple[int, bool]] = []
    with pytest.raises(ClientError, match="broke off"):
        write_results(api, rows(*CELLS), state, Writer(), lambda r, t: None, lambda s, now: saves.append((s.written, now)))
    assert saves[-1] == (2, True)  # a.com and the blank row are written; saved as the run stops
    with pytest.raises(ClientError, match="the batch answered 'a.com' for 'x.com': was the input changed"):
        write_results(api, rows("x.com", *CELLS[1:]), RunState("run", "file", state.chunks), Writer(), lambda r, t: None,
                      lambda s, now: None)
    with pytest.raises(ClientError, match="fewer rows than when its batches were submitted"):
        write_results(FakeBatches(), [], RunState("run", "file", state.chunks), Writer(), lambda r, t: None,
                      lambda s, now: None)


def test_the_state_round_trips_and_another_runs_state_is_ignored(tmp_path) -> None:
    state = RunState("run", "file")
    submit_batches(FakeBatches(), rows(*CELLS), state, lambda s: None)
    state.written, state.written_bytes, state.tally = 3, 120, Tally(answered=2, rejected=1, cost_usd=0.25)
    path = tmp_path / "out.csv.part.batch.json"
    save_state(path, state)
    assert load_state(path, "run") == state
    assert load_state(path, "another run") is None
    path.write_text("{not json")
    assert load_state(path, "run") is None


def test_one_progress_line_with_rate_and_time_left() -> None:
    now = [100.0]
    out = io.StringIO()
    progress = BatchProgress(out, every=10, clock=lambda: now[0])
    progress.show(0, 100)
    now[0] = 105.0
    progress.show(20, 100)  # within 10 s of the last line: not shown
    now[0] = 110.0
    progress.show(40, 100)
    now[0] = 111.0
    progress.show(100, 100)  # the end is always shown
    assert out.getvalue().splitlines() == [
        "batches: 0/100 domains (0%), 0.0/s, ETA unknown",
        "batches: 40/100 domains (40%), 4.0/s, ETA 0m15s",
        "batches: 100/100 domains (100%), 9.1/s, done"]


def test_on_a_terminal_the_progress_line_is_rewritten_in_place() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    now = [0.0]
    out = Terminal()
    progress = BatchProgress(out, clock=lambda: now[0])
    for finished in (0, 1, 2):
        now[0] += 1
        progress.show(finished, 2)
    assert out.getvalue() == ("\r\033[Kbatches: 0/2 domains (0%), 0.0/s, ETA unknown"
                              "\r\033[Kbatches: 1/2 domains (50%), 1.0/s, ETA 0m01s"
                              "\r\033[Kbatches: 2/2 domains (100%), 1.0/s, done\n")


def test_waiting_gives_up_when_nothing_finishes_and_names_the_batches() -> None:
    class Stuck(FakeBatches):
        def batch(self, batch_id: str) -> dict[str, Any]:
            return {"batch_id": batch_id, "total": 2, "pending": 1}

    api, state = Stuck(), RunState("run", "file")
    submit_batches(api, rows("a.com", "b.com"), state, lambda s: None)
    with pytest.raises(ClientError, match="nothing finished for 0s; batches still running: b0; run the same command"):
        wait_for_batches(api, state, BatchProgress(io.StringIO()), poll_interval=0.01, stall_timeout=0.05)


def test_a_saved_run_of_another_input_is_told_apart_from_none_and_from_this_one(tmp_path) -> None:  # noqa: ANN001
    from firmsift.entrypoints.cli.batch_state import saved_for_another_run

    path = tmp_path / "out.csv.part.batch.json"
    assert not saved_for_another_run(path, "this-run")  # nothing saved: nothing to say
    save_state(path, RunState("this-run", "keys"))
    assert not saved_for_another_run(path, "this-run") and load_state(path, "this-run") is not None
    assert saved_for_another_run(path, "edited-input")  # a new run says it does not resume that one
    path.write_text("{not json")
    assert not saved_for_another_run(path, "this-run")  # unreadable: not a run at all

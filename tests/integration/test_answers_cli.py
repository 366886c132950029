"""`firmsift answers import|list|undo` on a SQLite file, and `firmsift eval --human-labels`
reading its labels from the human answers stored there."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from firmsift.domain.evaluation import LabelledDomain
from firmsift.entrypoints.wiring.container import Container
from firmsift.entrypoints.wiring.evaluation import evaluation_backends
from firmsift.entrypoints.eval.human_labels import human_labels
from firmsift.entrypoints.settings import Settings
from tests.support.processes import REPO

CORRECTIONS = """domain,answer,note,classifier
https://www.Acme.com/,yes,makes soap,
bad..name,no,x,
foo.com,maybe,x,
acme.com,no,listed again,cpg
bar.com,no,,
baz.com,no,a bank,nope
qux.com,FALSE,a bank,cpg
"""


def firmsift(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}"}
    return subprocess.run([sys.executable, "-m", "firmsift.entrypoints.cli.main", *args], cwd=REPO, env=environment,
                          capture_output=True, text=True, timeout=60)


def test_import_keeps_good_rows_reports_bad_ones_by_line_and_is_idempotent(tmp_path: Path) -> None:
    source = tmp_path / "corrections.csv"
    source.write_text(CORRECTIONS, encoding="utf-8")
    assert firmsift(tmp_path, "db", "upgrade").returncode == 0  # `answers` never creates a database
    first = firmsift(tmp_path, "answers", "import", str(source))
    assert first.returncode == 1
    assert first.stderr.splitlines() == [
        "line 3: domain 'bad..name' has an empty label",
        "line 4: answer 'maybe' must be yes, no, true or false",
        "line 5: acme.com (cpg) is listed twice (first on line 2)",
        "line 6: note is required: say why the answer is corrected",
        "line 7: unknown classifier 'nope'; known: cpg",
    ]
    assert "imported 2 human answer(s), 0 unchanged; 5 row(s) rejected" in first.stdout
    again = firmsift(tmp_path, "answers", "import", str(source))
    assert "imported 0 human answer(s), 2 unchanged" in again.stdout

    listed = firmsift(tmp_path, "answers", "list")
    assert [(d["domain"], d["answer"], d["note"], d["source"]) for d in map(json.loads, listed.stdout.splitlines())] \
        == [("acme.com", True, "makes soap", "human"), ("qux.com", False, "a bank", "human")]
    exported = firmsift(tmp_path, "answers", "list", "--csv", "--classifier", "cpg").stdout
    rows = list(csv.DictReader(io.StringIO(exported)))
    assert [(r["domain"], r["answer"], r["note"]) for r in rows] == [("acme.com", "true", "makes soap"),
                                                                    ("qux.com", "false", "a bank")]
    unknown = firmsift(tmp_path, "answers", "list", "--classifier", "nope")
    assert unknown.returncode == 2 and "unknown classifier 'nope'" in unknown.stderr
    # The export is what import reads: importing it back changes nothing.
    (tmp_path / "exported.csv").write_text(exported, encoding="utf-8")
    assert "imported 0 human answer(s), 2 unchanged; 0 row(s) rejected" in firmsift(
        tmp_path, "answers", "import", str(tmp_path / "exported.csv")).stdout

    backends = evaluation_backends(Settings(database_url=f"sqlite:///{tmp_path / 'cli.db'}"))
    assert human_labels(backends, "cpg") == [LabelledDomain("acme.com", True, "makes soap"),
                                             LabelledDomain("qux.com", False, "a bank")]


def test_undo_restores_the_earlier_answer_then_none_then_says_there_is_nothing(tmp_path: Path) -> None:
    assert firmsift(tmp_path, "db", "upgrade").returncode == 0
    for line in ("acme.com,yes,makes soap", "acme.com,no,a bank"):
        (tmp_path / "one.csv").write_text(f"domain,answer,note\n{line}\n", encoding="utf-8")
        assert firmsift(tmp_path, "answers", "import", str(tmp_path / "one.csv")).returncode == 0
    first = firmsift(tmp_path, "answers", "undo", "www.acme.com", "--classifier", "cpg")
    assert first.returncode == 0
    assert first.stdout.strip() == "removed the human answer no for acme.com (cpg); restored yes (makes soap)"
    second = firmsift(tmp_path, "answers", "undo", "acme.com")
    assert second.stdout.strip() == "removed the human answer yes for acme.com (cpg); no human answer now"
    nothing = firmsift(tmp_path, "answers", "undo", "acme.com")
    assert nothing.returncode == 1 and "no human answer for acme.com (cpg) to undo" in nothing.stderr
    bad = firmsift(tmp_path, "answers", "undo", "localhost")
    assert bad.returncode == 2 and "domain 'localhost'" in bad.stderr


def test_notes_a_spreadsheet_would_run_come_back_from_the_export_unchanged(tmp_path: Path) -> None:
    assert firmsift(tmp_path, "db", "upgrade").returncode == 0
    (tmp_path / "notes.csv").write_text('domain,answer,note\nacme.com,no,"=HYPERLINK(""http://evil"")"\n'
                                        "soap.com,yes,-5% margin: makes soap\n", encoding="utf-8")
    assert "imported 2 human answer(s)" in firmsift(tmp_path, "answers", "import", str(tmp_path / "notes.csv")).stdout
    exported = firmsift(tmp_path, "answers", "list", "--csv").stdout
    assert [r["note"] for r in csv.DictReader(io.StringIO(exported))] == ["'=HYPERLINK(\"http://evil\")",
                                                                           "'-5% margin: makes soap"]
    (tmp_path / "exported.csv").write_text(exported, encoding="utf-8")
    assert "imported 0 human answer(s), 2 unchanged; 0 row(s) rejected" in firmsift(
        tmp_path, "answers", "import", str(tmp_path / "exported.csv")).stdout
    assert [json.loads(line)["note"] for line in firmsift(tmp_path, "answers", "list").stdout.splitlines()] \
        == ['=HYPERLINK("http://evil")', "-5% margin: makes soap"]
    # One undo takes the answer back to none: the import added nothing to the history.
    assert "no human answer now" in firmsift(tmp_path, "answers", "undo", "acme.com").stdout


def test_eval_takes_a_labels_file_or_human_labels_never_both_nor_neither(tmp_path: Path) -> None:
    assert firmsift(tmp_path, "db", "upgrade").returncode == 0
    (tmp_path / "labels.csv").write_text("domain,label\nacme.com,yes\n", encoding="utf-8")
    both = firmsift(tmp_path, "eval", str(tmp_path / "labels.csv"), "--human-labels")
    assert both.returncode == 2 and "not both" in both.stderr
    neither = firmsift(tmp_path, "eval")
    assert neither.returncode == 2 and "--human-labels" in neither.stderr
    empty = firmsift(tmp_path, "eval", "--human-labels", "--replay", "--snapshots", str(tmp_path))
    assert empty.returncode == 2 and "no human answers for classifier 'cpg'" in empty.stderr


def test_every_answers_action_has_help() -> None:
    for action in ("import", "list", "undo"):
        shown = subprocess.run([sys.executable, "-m", "firmsift.entrypoints.cli.main", "answers", action, "--help"],
                               capture_output=True, text=True, timeout=60)
        assert shown.returncode == 0 and "usage: firmsift answers " + action in shown.stdout


def test_forget_removes_cached_answers_by_domain_or_all_and_says_how_many(tmp_path: Path) -> None:
    import anyio

    from firmsift.domain.model import Answer, DomainResult, Job, JobStatus, ResultStatus, Source
    from firmsift.domain.clock import utc_now

    assert firmsift(tmp_path, "db", "upgrade").returncode == 0
    container = Container(settings=Settings(database_url=f"sqlite:///{tmp_path / 'cli.db'}"))
    store, now = container.store(), utc_now()

    async def answer_all() -> None:
        await store.create_job(Job(id="j1", classifier="cpg", status=JobStatus.PENDING, created_at=now,
                                   domains=("a.com", "gone.com", "c.com")))
        for domain, source in (("a.com", Source.LLM), ("gone.com", Source.PRECHECK), ("c.com", Source.LLM)):
            given = Answer(domain=domain, classifier="cpg", status=ResultStatus.DONE, answered_at=now, source=source,
                           answer=None if source is Source.PRECHECK else True, reason="r",
                           site_status="no_dns" if source is Source.PRECHECK else None)
            await store.save_result("j1", DomainResult.from_answer(given, source), given)

    anyio.run(answer_all)
    container.shutdown_resources()
    precheck = firmsift(tmp_path, "forget", "--all", "--precheck-only")
    assert (precheck.returncode, precheck.stdout) == (
        0, "forgot 1 pre-check outcome(s); the next job about those domains asks again\n")
    one = firmsift(tmp_path, "forget", "--domain", "https://www.A.com/")
    assert one.stdout.startswith("forgot 1 cached answer(s)")
    rest = firmsift(tmp_path, "forget", "--all")
    assert rest.stdout.startswith("forgot 1 cached answer(s)")
    missing = firmsift(tmp_path, "forget", "--batch", "0f8c2a7e-8f9b-4f1e-9b1a-2d5b8c7e6a10")
    assert missing.returncode == 1 and "0f8c2a7e-8f9b-4f1e-9b1a-2d5b8c7e6a10" in missing.stderr
    bad = firmsift(tmp_path, "forget", "--domain", "bad..name")
    assert bad.returncode == 1 and "bad..name" in bad.stderr
    neither = firmsift(tmp_path, "forget")
    assert neither.returncode == 2 and "one of the arguments --domain --batch --all is required" in neither.stderr

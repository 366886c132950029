"""`firmsift eval --human-labels` as a user runs it: the labelled set imported as human answers
scores every candidate exactly as the labels file does (same scripted LLM, same evidence)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.e2e.test_eval_cli import CANDIDATES, LABELS, env, evaluate, llm, search  # noqa: F401 - fixtures
from tests.support.processes import run_cli

pytestmark = pytest.mark.e2e


@pytest.mark.long(90)
def test_human_answers_score_candidates_as_the_labels_file_does(env: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    from_file, _ = evaluate(env, tmp_path, "--record", report="from-file")
    with LABELS.open(newline="", encoding="utf-8") as labels, (tmp_path / "corrections.csv").open(
            "w", newline="", encoding="utf-8") as corrections:
        writer = csv.writer(corrections)
        writer.writerow(["domain", "answer", "note"])
        for row in csv.DictReader(labels):
            writer.writerow([row["domain"], row["label"], row["notes"] or "labelled by hand"])
    assert run_cli(env, "db", "upgrade").returncode == 0
    imported = run_cli(env, "answers", "import", str(tmp_path / "corrections.csv"))
    assert imported.returncode == 0, imported.stderr

    result = run_cli(env, "eval", "--human-labels", "--candidates", str(CANDIDATES), "--snapshots",
                     str(tmp_path / "snapshots"), "--cache", str(tmp_path / "cache.jsonl"), "--replay",
                     "--output", str(tmp_path / "from-human"))
    assert result.returncode == 0, result.stderr
    from_human = json.loads((tmp_path / "from-human" / "report.json").read_text())
    assert from_human["labels_file"] == "the human answers of cpg (database)"
    assert from_human["labelled"] == from_file["labelled"]
    # The scores; latency and spend differ (the second run reads the first's cached LLM answers).
    scores = ("total", "correct", "accuracy", "precision", "recall", "f1", "confusion", "false_negatives",
              "false_positives", "unparseable", "failed")
    assert [{k: c["metrics"][k] for k in scores} for c in from_human["candidates"]] == [
        {k: c["metrics"][k] for k in scores} for c in from_file["candidates"]]

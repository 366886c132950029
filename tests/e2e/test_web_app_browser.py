"""The web app in real headless Chromium against real `firmsift api` and `firmsift worker` processes
on the scripted providers: sign in, upload a 200-row CSV, watch the rows arrive, filter, open a row,
review, correct a row, see it on the Human answers page, export and undo it, export, sign out. No
console error, no CSP violation, no serious or critical axe-core violation on any page; the
screenshots of each step are kept in the test's tmp dir (path printed)."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.node_tools import require_node_package
from tests.support.processes import REPO, Processes, run_cli, start_api, start_worker

pytestmark = pytest.mark.e2e

FLOW_SCRIPT = REPO / "tests" / "support" / "web_app_browser.mjs"
ROWS = 200


def _browser() -> tuple[str, str]:
    chromium = os.environ.get("FIRMSIFT_CHROMIUM", "/usr/bin/chromium")
    no_chromium = [] if os.access(chromium, os.X_OK) else [
        f"no Chromium at {chromium}: `apt-get install chromium` or set FIRMSIFT_CHROMIUM"]
    no_axe = [] if (REPO / "node_modules" / "axe-core" / "package.json").is_file() else [
        "node_modules/axe-core is missing: run `npm ci`"]
    return require_node_package("playwright-core", "web app browser test", *no_chromium, *no_axe), chromium


def _upload(path: Path) -> Path:
    """200 rows as analysts export them: a name, a website (some of them banks, answered no by the
    scripted LLM), a note; a few rows have no usable website."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(["Company", "Website", "Owner"])
    for i in range(ROWS):
        if i % 50 == 7:
            site = "" if i % 100 == 7 else "not a website"
        else:
            site = f"https://www.{'bank' if i % 5 == 0 else 'brand'}{i}.com/about"
        writer.writerow([f"Company {i} <b>&", site, f"owner{i % 4}"])
    path.write_text(out.getvalue(), encoding="utf-8")
    return path


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[str, str]]:
    processes = Processes(tmp_path)
    try:
        script = tmp_path / "llm-script.json"
        doubtful = json.dumps({"is_cpg": True, "confidence": 1, "reasoning": "Maybe <script>alert(1)</script>",
                               "quote": "words the page never said"})
        script.write_text(json.dumps({"*": {"brand3.com": {"content": doubtful},
                                            "brand11.com": {"content": "I would rather not say."}}}))
        _llm, llm_port = processes.start_fake("tests.support.fake_llm_server", "--delay", "0.3", "--script", str(script))
        _search, search_port = processes.start_fake("tests.support.fake_search_server")
        processes.env = {
            "FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'web.db'}",
            "FIRMSIFT_LLM_MODEL": "openai/fake-model",
            "FIRMSIFT_LLM_API_BASE": f"http://127.0.0.1:{llm_port}/v1",
            "FIRMSIFT_SEARCH_PROVIDER": "searxng",
            "FIRMSIFT_SEARXNG_URL": f"http://127.0.0.1:{search_port}",
            "FIRMSIFT_AUTH": "required",  # loopback would leave it off: the sign-in is what is tested
            "FIRMSIFT_PRECHECK": "false",
            "FIRMSIFT_MAX_DOMAINS_PER_JOB": "10",
        }
        assert run_cli(processes.env, "db", "upgrade").returncode == 0
        created = run_cli(processes.env, "keys", "create", "--name", "analyst")
        assert created.returncode == 0, created.stderr
        _api, base = start_api(processes)
        start_worker(processes)
        yield base, created.stdout.strip()
    finally:
        processes.stop_all()


def test_an_analyst_uploads_watches_filters_reviews_corrects_exports_and_signs_out(tmp_path: Path, stack) -> None:
    node, chromium = _browser()
    base, key = stack
    shots = tmp_path / "screenshots"
    shots.mkdir()
    upload = _upload(tmp_path / "companies.csv")

    run = subprocess.run([node, str(FLOW_SCRIPT), base, key, str(upload), str(shots)], cwd=REPO,
                         capture_output=True, text=True, timeout=420, env={**os.environ, "FIRMSIFT_CHROMIUM": chromium})

    print(f"web app screenshots: {shots}")
    assert run.returncode == 0, f"browser flow failed:\n{run.stdout}\n{run.stderr}"
    report = json.loads(run.stdout.strip().splitlines()[-1])
    (shots / "report.json").write_text(json.dumps(report, indent=2))
    steps = report["steps"]
    assert report["errors"] == [], report["errors"]
    assert report["csp"] == []
    assert report["axe"] and all(found == [] for found in report["axe"].values()), report["axe"]
    assert set(report["axe"]) == {"login", "batches-empty", "new-batch", "batch", "batch-row-open", "review",
                                  "review-corrected", "human-answers", "human-answers-undone", "batches",
                                  "not-found", "batch-narrow"}
    assert steps["login_url"] == "/login" and steps["key_in_storage"] is False
    assert steps["column"] == "Website" and steps["preview_rows"] == 10
    assert any("not a website" not in r and "line 9" in r for r in steps["rejected_shown"])  # the blank cell
    assert "To ask the LLM" in steps["estimate"] and "Expected cost" in steps["estimate"]
    # Rows arrived while the page was open: a partial count was on the page before the last one.
    # (How many partial counts the 0.5 s look sees depends on the machine's load, so only one is required.)
    assert steps["final_status"] == "DONE" and steps["rows"] == ROWS
    seen = steps["done_counts_seen"]
    assert len(seen) >= 2 and seen[0] < seen[-1] == ROWS - 5, seen  # 4 rejected, 1 failed
    assert steps["filtered_answers"] == ["no"] and steps["filtered_rows"] == 40  # the banks
    assert steps["sorted"] == "ascending"
    assert steps["row_open"] and "Reason" in steps["row_details"] and "Provenance" in steps["row_details"]
    assert steps["evidence_rel"] in (None, "noopener noreferrer nofollow")
    assert steps["review_rows"] == 2  # brand3.com's low confidence and unverified quote, brand11.com failed
    # A row corrected from the review queue, from the keyboard: shown in place, listed, exported, undone.
    corrected = steps["corrected_domain"]
    assert corrected in ("brand3.com", "brand11.com")
    assert "Corrected by a person: no" in steps["corrected_row"] and "<b>not</b>" in steps["corrected_row"]
    assert steps["correction_notice"] == f"Corrected {corrected} (cpg) to no."
    assert len(steps["human_answers"]) == 1 and corrected in steps["human_answers"][0]
    exported_answers = list(csv.DictReader(Path(steps["export_human_answers"]).read_text(encoding="utf-8").splitlines()))
    assert [(r["domain"], r["classifier"], r["answer"], r["note"]) for r in exported_answers] == [
        (corrected, "cpg", "false", "Checked by hand: <b>not</b> a CPG brand")]
    assert steps["undo_notice"].startswith(f"Undid the correction of {corrected} (cpg) to no. It has no human answer")
    assert steps["human_answers_after_undo"] == 0
    assert steps["listed"] == 1 and steps["missing_status"] == 404
    assert steps["narrow_overflow"] <= 1
    assert steps["after_sign_out"] == "/login"
    exported = list(csv.reader(Path(steps["export_csv"]).read_text(encoding="utf-8").splitlines()))
    assert exported[0][:3] == ["Company", "Website", "Owner"] and len(exported) == ROWS + 1
    assert exported[1][0] == "Company 0 <b>&"
    lines = Path(steps["export_jsonl"]).read_text(encoding="utf-8").splitlines()
    assert len(lines) == ROWS and json.loads(lines[0])["input"]["Owner"] == "owner0"
    assert len(report["screenshots"]) == 14 and all(Path(p).stat().st_size > 5000 for p in report["screenshots"])

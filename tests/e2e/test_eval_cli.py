"""`firmsift eval` as a user runs it, against a scripted OpenAI-compatible server and a fake SearXNG.

The scripted answers (tests/fixtures/eval/llm-script.json) are known in advance, so every figure
in the report is checked against the hand computation written next to it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_llm_server import FakeLLMServer, Reply
from tests.support.fake_search_server import FakeSearchServer
from tests.support.processes import run_cli, wait_until

pytestmark = pytest.mark.e2e
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "eval"
LABELS, CANDIDATES = FIXTURES / "labels.csv", FIXTURES / "candidates.toml"
DOMAINS = 8


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    server = FakeLLMServer()
    server.script_file(FIXTURES / "llm-script.json")
    with server:
        yield server


@pytest.fixture
def search() -> Iterator[FakeSearchServer]:
    with FakeSearchServer() as server:
        yield server


@pytest.fixture
def env(llm: FakeLLMServer, search: FakeSearchServer, tmp_path: Path) -> dict[str, str]:
    return {
        "FIRMSIFT_LLM_API_BASE": llm.base_url,
        "FIRMSIFT_SEARCH_PROVIDER": "searxng",
        "FIRMSIFT_SEARXNG_URL": search.base_url,
        "FIRMSIFT_LLM_TIMEOUT": "3",  # a cold first call must not time out; golf (10 s) must
        "FIRMSIFT_LLM_RETRY_ATTEMPTS": "1",
        "FIRMSIFT_SEARCH_RETRY_ATTEMPTS": "1",
        "FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'unused.db'}",
        # The sandbox's DNS answers NXDOMAIN for every name: these runs score the search + LLM path
        # (tests/e2e/test_eval_precheck_cli.py runs the pre-check with a DNS server of its own).
        "FIRMSIFT_PRECHECK": "false",
    }


def evaluate(env: dict[str, str], tmp_path: Path, *extra: str, report: str = "report") -> tuple[dict, str]:
    result = run_cli(env, "eval", str(LABELS), "--candidates", str(CANDIDATES), "--snapshots",
                     str(tmp_path / "snapshots"), "--cache", str(tmp_path / "cache.jsonl"),
                     "--output", str(tmp_path / report), *extra)
    assert result.returncode == 0, result.stderr
    return json.loads((tmp_path / report / "report.json").read_text()), result.stdout


def by_name(document: dict) -> dict[str, dict]:
    return {candidate["name"]: candidate for candidate in document["candidates"]}


def test_every_figure_matches_the_hand_computation(env: dict[str, str], tmp_path: Path,
                                                   search: FakeSearchServer) -> None:
    document, stdout = evaluate(env, tmp_path, "--record")
    assert document["labelled"] == {"total": 8, "yes": 4, "no": 4} and document["evidence"] == "recorded"
    a = by_name(document)["model-a"]["metrics"]
    # model-a: alpha TP(5), bravo FN(2), charlie TN(4), delta FP(3), echo unparseable, foxtrot 500,
    # golf times out (10 s answer, 3 s timeout), hotel TN(5).
    assert (a["correct"], a["accuracy"]) == (3, 3 / 8)
    assert a["confusion"] == {"true_positives": 1, "false_positives": 1, "true_negatives": 2, "false_negatives": 1}
    # Precision over the 2 yes answers; recall over the 4 labelled yes (echo and golf, unanswered, were
    # not found either); F1 = 2TP / (2TP + FP + missed) = 2 / (2 + 1 + 3).
    assert (a["precision"], a["recall"], a["f1"]) == (0.5, 0.25, pytest.approx(1 / 3))
    assert a["false_negatives"] == ["bravo-foods.com"] and a["false_positives"] == ["delta-retail.com"]
    assert a["unparseable"] == ["echo-drinks.com"]
    assert a["failed"] == ["foxtrot-freight.com", "golf-pet.com"]
    levels = {level["confidence"]: (level["answered"], level["correct"]) for level in a["by_confidence"]}
    assert levels == {5: (2, 2), 4: (1, 1), 3: (1, 0), 2: (1, 0), 1: (0, 0)}
    # Six completions were paid for: alpha (1000 + 100 tokens) and five at the server's 10 + 10.
    assert (a["llm_calls"], a["prompt_tokens"], a["completion_tokens"]) == (6, 1050, 150)
    assert a["cost_usd"] == pytest.approx((1050 * 1.0 + 150 * 4.0) / 1e6)  # the candidate's own prices
    assert a["latency"]["llm_p95"] >= 3.0  # the timed-out call waited its full 3 s
    # Four of model-a's five answers quote the fake search's snippet; bravo, an older prompt's
    # answer, gives no quote (its confidence 2 is under the cap anyway).
    assert a["quotes"] == {"llm_answers": 5, "verified_share": 0.8,
                           "by_status": {"verified": 4, "unverified": 0, "no_quote": 1, "no_evidence": 0}}
    assert "80.0% (4/5)" in stdout
    b = by_name(document)["model-b"]["metrics"]
    assert (b["accuracy"], b["false_negatives"], b["failed"]) == (1.0, [], [])
    # model-b never quotes: every answer is right, but none keeps its stated confidence 4.
    assert (b["quotes"]["verified_share"], b["quotes"]["by_status"]["no_quote"]) == (0.0, 8)
    assert [level["answered"] for level in b["by_confidence"]] == [0, 8, 0, 0, 0]
    assert (b["prompt_tokens"], b["completion_tokens"]) == (16000, 400)
    assert b["cost_usd"] is None  # "openai/model-b" is in no price list and the file gives none
    assert b["cost_note"] == "local" and "n/a (local)" in stdout  # its API base is on loopback
    echo = {o["domain"]: o for o in by_name(document)["model-a"]["outcomes"]}["echo-drinks.com"]
    assert echo["raw_output"] == "I think it probably is one."
    assert "it began: I think it probably is one." in echo["error"]
    assert "what the model wrote: I think it probably is one." in (tmp_path / "report" / "report.md").read_text()
    assert "<pre>I think it probably is one.</pre>" in (tmp_path / "report" / "report.html").read_text()
    # golf's timeout is not retried here (FIRMSIFT_LLM_RETRY_ATTEMPTS=1): the summary says so, once.
    assert by_name(document)["model-a"]["retries"] == {"total": 0, "by_cause": {}}
    assert [row["domain"] for row in document["disagreements"]] == [
        "bravo-foods.com", "delta-retail.com", "echo-drinks.com", "foxtrot-freight.com", "golf-pet.com"]
    # One search per domain, although two candidates use the provider.
    assert len(search.requests) == DOMAINS
    assert "37.5%" in stdout and "bravo-foods.com" in stdout
    assert a["search_failed"] == [] and by_name(document)["model-a"]["max_tokens"] == 400
    for name in ("report.json", "report.md", "report.html"):
        assert (tmp_path / "report" / name).stat().st_size > 0


def test_a_run_of_openai_compatible_candidates_never_imports_litellm(env: dict[str, str], tmp_path: Path) -> None:
    # Both candidates are `openai/...` models: the direct client asks them and litellm's price map
    # is read as a file (make_eval_pricing), so the run does not pay litellm's seconds of start-up.
    result = run_cli({**env, "PYTHONPROFILEIMPORTTIME": "1"}, "eval", str(LABELS), "--candidates", str(CANDIDATES),
                     "--no-cache", "--output", str(tmp_path / "report"))
    assert result.returncode == 0, result.stderr[-3000:]
    imported = {line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
    assert "firmsift.adapters.llm.openai_chat" in imported and "firmsift.adapters.llm.price_map" in imported
    assert "litellm" not in imported


def test_replay_makes_no_search_call_and_gives_the_same_verdicts(env: dict[str, str], tmp_path: Path,
                                                                 search: FakeSearchServer,
                                                                 llm: FakeLLMServer) -> None:
    recorded, _ = evaluate(env, tmp_path, "--record", "--no-cache")
    searches, calls = len(search.requests), len(llm.requests)
    replayed, _ = evaluate(env, tmp_path, "--replay", "--no-cache", report="replayed")
    assert len(search.requests) == searches  # no search at all
    assert len(llm.requests) == 2 * calls  # --no-cache: every candidate asked again
    assert replayed["evidence"] == "replayed"

    def verdicts(document: dict) -> dict:
        return {c["name"]: [(o["domain"], o["verdict"]) for o in c["outcomes"]] for c in document["candidates"]}

    assert verdicts(replayed) == verdicts(recorded)
    # The prompts sent on replay carried the recorded evidence.
    assert all("what alpha-snacks.com makes" in json.dumps(r.body) for r in llm.requests
               if "alpha-snacks.com" in json.dumps(r.body))


def test_a_rerun_is_answered_from_the_cache_with_the_same_figures(env: dict[str, str], tmp_path: Path,
                                                                  llm: FakeLLMServer) -> None:
    first, _ = evaluate(env, tmp_path, "--record")
    calls = len(llm.requests)
    second, _ = evaluate(env, tmp_path, "--replay", report="again")
    # Only the two failures (a 500 and a timeout) are asked again: failures are never cached.
    assert len(llm.requests) - calls == 2
    a1, a2 = by_name(first)["model-a"]["metrics"], by_name(second)["model-a"]["metrics"]
    assert a2["cached_completions"] == 6 and a1["cached_completions"] == 0
    for figure in ("accuracy", "confusion", "by_confidence", "prompt_tokens", "cost_usd", "llm_calls"):
        assert a1[figure] == a2[figure]


def test_an_interrupted_run_resumes_without_asking_twice(env: dict[str, str], tmp_path: Path,
                                                         llm: FakeLLMServer) -> None:
    for domain in ("alpha-snacks.com", "bravo-foods.com", "charlie-bank.com", "delta-retail.com",
                   "echo-drinks.com", "hotel-software.com"):  # slow answers, so the kill lands mid-run
        llm.script(domain, Reply(content='{"is_cpg": true, "confidence": 4, "reasoning": "slow"}', delay=0.3))
    args = [sys.executable, "-m", "firmsift.entrypoints.cli.main", "eval", str(LABELS), "--candidates", str(CANDIDATES),
            "--cache", str(tmp_path / "cache.jsonl"), "--output", str(tmp_path / "report"), "--concurrency", "2"]
    run = subprocess.Popen(args, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    cache = tmp_path / "cache.jsonl"
    # Generous bounds: under a parallel suite on 2 cores an eval process alone may take 30 s to start.
    wait_until(lambda: cache.exists() and len(cache.read_text().splitlines()) >= 3, 120, "three answers cached")
    run.send_signal(signal.SIGKILL)  # as abrupt as an interruption gets: no clean-up at all
    run.wait(10)
    cached_before = len(cache.read_text().splitlines())
    time.sleep(0.5)  # let calls the killed run left in flight reach the server before counting
    before = len(llm.requests)
    document, _ = evaluate(env, tmp_path, report="resumed")
    resumed = llm.requests[before:]
    # Every completion cached before the kill was reused: 16 answers needed in all, minus those.
    succeeded = sum(c["metrics"]["llm_calls"] for c in document["candidates"])
    assert sum(c["metrics"]["cached_completions"] for c in document["candidates"]) == cached_before
    assert len(resumed) == 16 - cached_before  # each domain x candidate asked once, cached ones not at all
    assert succeeded == 14 and cached_before >= 3


def test_ctrl_c_stops_with_exit_130_and_says_how_to_resume(env: dict[str, str], tmp_path: Path,
                                                           llm: FakeLLMServer) -> None:
    llm.script("alpha-snacks.com", Reply(content="{}", delay=30), model="model-a")
    # -X faulthandler: if the process outlives the wait below, SIGABRT makes it print where each thread is.
    args = [sys.executable, "-X", "faulthandler", "-m", "firmsift.entrypoints.cli.main", "eval", str(LABELS),
            "--candidates", str(CANDIDATES), "--cache", str(tmp_path / "cache.jsonl"), "--output", str(tmp_path / "report")]
    # As from a terminal: a suite started as a background job (`./dev test &`, nohup) ignores
    # SIGINT, and an ignored signal stays ignored in the processes it starts. A handled one is
    # reset to its default by exec, so the eval process gets Python's own Ctrl-C handling.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        run = subprocess.Popen(args, env={**os.environ, **env, "FIRMSIFT_LLM_TIMEOUT": "60"},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    finally:
        signal.signal(signal.SIGINT, previous)
    wait_until(lambda: any("alpha-snacks.com" in json.dumps(r.body) for r in llm.requests), 120,
               "alpha asked")  # generous: an eval process alone may take 30 s to start under a parallel suite
    run.send_signal(signal.SIGINT)
    try:
        _, stderr = run.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        masks = [line for line in Path(f"/proc/{run.pid}/status").read_text().splitlines() if line.startswith("Sig")]
        run.send_signal(signal.SIGABRT)
        _, stderr = run.communicate(timeout=20)
        pytest.fail(f"eval still running 20 s after SIGINT; its signal masks {masks}; its threads at SIGABRT:\n"
                    f"{stderr[-6000:]}")
    assert run.returncode == 130
    assert "interrupted" in stderr and "run the same command again to resume" in stderr
    assert not (tmp_path / "report").exists()


def test_bad_inputs_exit_2_naming_every_problem(env: dict[str, str], tmp_path: Path) -> None:
    labels = tmp_path / "labels.csv"
    labels.write_text("domain,label\nok.com,yes\nlocalhost,yes\nok.com,no\nfine.com,maybe\n")
    result = run_cli(env, "eval", str(labels), "--output", str(tmp_path / "r"))
    assert result.returncode == 2
    for text in ("line 3", "localhost", "line 4: ok.com is labelled twice (first on line 2)", "line 5", "maybe"):
        assert text in result.stderr
    assert run_cli(env, "eval", str(tmp_path / "missing.csv")).returncode == 2
    no_label = tmp_path / "nolabel.csv"
    no_label.write_text("domain\nok.com\n")
    result = run_cli(env, "eval", str(no_label))
    assert result.returncode == 2 and "'label' column" in result.stderr
    candidates = tmp_path / "candidates.toml"
    candidates.write_text('[[candidate]]\nname = "a b"\nmodle = "x"\n[[candidate]]\nname = "c"\nsearch = "bing"\n')
    result = run_cli(env, "eval", str(LABELS), "--candidates", str(candidates))
    assert result.returncode == 2
    for text in ("unknown key 'modle'", "name 'a b'", "search 'bing'"):
        assert text in result.stderr
    result = run_cli(env, "eval", str(LABELS), "--replay", "--snapshots", str(tmp_path / "empty"))
    assert result.returncode == 2 and "--record first" in result.stderr
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    for option in (["--output", str(a_file)], ["--cache", str(tmp_path)], ["--record", "--snapshots", str(a_file)],
                   ["--output", str(a_file / "below")]):
        result = run_cli(env, "eval", str(LABELS), *option)
        assert result.returncode == 2 and "Traceback" not in result.stderr, (option, result.stderr)
    assert not (tmp_path / "r").exists()


@pytest.mark.long(75)
def test_an_interrupted_recording_resumes_where_it_stopped(env: dict[str, str], tmp_path: Path,
                                                           search: FakeSearchServer) -> None:
    evaluate(env, tmp_path, "--record", "--limit", "3", "--no-cache")  # as if killed after three domains
    assert len(search.requests) == 3
    document, _ = evaluate(env, tmp_path, "--record", "--no-cache", report="rest")
    assert len(search.requests) == DOMAINS  # only the five not yet recorded were searched
    replayed, _ = evaluate(env, tmp_path, "--replay", "--no-cache", report="replayed")
    assert len(search.requests) == DOMAINS and len(replayed["candidates"][0]["outcomes"]) == DOMAINS


def test_a_candidate_with_its_own_server_never_gets_the_settings_keys(env: dict[str, str], tmp_path: Path,
                                                                      llm: FakeLLMServer) -> None:
    candidates = tmp_path / "candidates.toml"
    candidates.write_text(f'[[candidate]]\nname = "local"\nmodel = "openai/model-b"\napi_base = "{llm.base_url}"\n')
    secrets = {"FIRMSIFT_LLM_API_KEY": "sk-settings-key-1234", "OPENAI_API_KEY": "sk-openai-key-5678"}
    result = run_cli({**env, **secrets}, "eval", str(LABELS), "--candidates", str(candidates), "--no-cache",
                     "--output", str(tmp_path / "report"))
    assert result.returncode == 0, result.stderr
    sent = {r.headers.get("authorization") for r in llm.requests}
    assert sent == {"Bearer no-key-required"}


@pytest.mark.long(65)
def test_known_companies_are_used_only_when_asked(env: dict[str, str], tmp_path: Path, llm: FakeLLMServer) -> None:
    known = tmp_path / "known.csv"
    known.write_text("domain,name\nalpha-snacks.com,Alpha Snacks\n")
    assert run_cli(env, "db", "upgrade").returncode == 0  # `companies import` never creates a database
    assert run_cli(env, "companies", "import", str(known)).returncode == 0
    document, _ = evaluate(env, tmp_path, "--known-companies", "--no-cache")
    alpha = next(o for o in by_name(document)["model-a"]["outcomes"] if o["domain"] == "alpha-snacks.com")
    assert (alpha["source"], alpha["verdict"], alpha["confidence"], alpha["llm_seconds"]) == ("known_company", "yes", 5, None)
    assert not any("alpha-snacks.com" in json.dumps(r.body) for r in llm.requests)
    plain, _ = evaluate(env, tmp_path, "--no-cache", report="plain")
    assert {o["source"] for o in by_name(plain)["model-a"]["outcomes"]} == {"llm"}  # the default scores search + LLM


def test_a_candidates_key_is_sent_but_never_written(env: dict[str, str], tmp_path: Path, llm: FakeLLMServer) -> None:
    secret = "sk-eval-test-9f8e7d6c5b4a"
    candidates = tmp_path / "candidates.toml"
    candidates.write_text('[[candidate]]\nname = "keyed"\nmodel = "openai/model-b"\napi_key_env = "EVAL_TEST_KEY"\n')
    args = ["eval", str(LABELS), "--candidates", str(candidates), "--cache", str(tmp_path / "cache.jsonl"),
            "--snapshots", str(tmp_path / "snaps"), "--record", "--output", str(tmp_path / "report")]
    missing = run_cli(env, *args)
    assert missing.returncode == 2 and "EVAL_TEST_KEY, which is not set" in missing.stderr
    result = run_cli({**env, "EVAL_TEST_KEY": secret}, *args)
    assert result.returncode == 0, result.stderr
    assert all(r.headers.get("authorization") == f"Bearer {secret}" for r in llm.requests)
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written and not any(secret in p.read_text(errors="replace") for p in written)
    assert secret not in result.stdout + result.stderr


def test_retries_are_summarised_by_cause_not_logged_one_by_one(env: dict[str, str], tmp_path: Path) -> None:
    # foxtrot answers 500 for model-a every time: with 3 attempts, two retries; golf's timeout is on a
    # loopback (local) server, so it is not retried at all.
    result = run_cli({**env, "FIRMSIFT_LLM_RETRY_ATTEMPTS": "3", "FIRMSIFT_RETRY_BASE_DELAY": "0.01"}, "eval",
                     str(LABELS), "--candidates", str(CANDIDATES), "--snapshots", str(tmp_path / "snapshots"),
                     "--record", "--no-cache", "--output", str(tmp_path / "report"))
    assert result.returncode == 0, result.stderr
    document = json.loads((tmp_path / "report" / "report.json").read_text())
    assert by_name(document)["model-a"]["retries"] == {"total": 2, "by_cause": {"provider error": 2}}
    assert by_name(document)["model-b"]["retries"] == {"total": 0, "by_cause": {}}
    assert "LLM retries for model-a: 2 retries (provider error 2)" in result.stderr
    assert "trying again" not in result.stderr
    assert "LLM retries: 2 (provider error 2)" in (tmp_path / "report" / "report.md").read_text()

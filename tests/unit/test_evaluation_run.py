"""The evaluation run on in-memory fakes: evidence once per provider, record/replay, the LLM cache."""

import dataclasses
import itertools

import pytest

from firmsift.adapters.files.classifiers import load_catalog
from firmsift.adapters.memory.evaluation import InMemoryCompletionCache, InMemorySnapshots
from firmsift.adapters.memory.providers import FixedPricing, ScriptedLLM, StaticSearch
from firmsift.domain.errors import ProviderError
from firmsift.domain.evaluation import GatheredEvidence, LabelledDomain, OutcomeKind
from firmsift.domain.model import Evidence, KnownCompany, QuoteStatus
from firmsift.services.evaluation_run import (
    Candidate,
    CandidateSpec,
    Evaluation,
    LiveEvidence,
    MissingSnapshots,
    ReplayedEvidence,
    completion_key,
    evaluate,
)

pytestmark = pytest.mark.anyio
CPG = load_catalog()["cpg"]
LABELS = [LabelledDomain("snacks.com", True), LabelledDomain("bank.com", False), LabelledDomain("soap.com", True)]
YES = '{"is_cpg": true, "confidence": 5, "reasoning": "Makes snacks.", "quote": "makes and sells packaged snacks"}'
NO = '{"is_cpg": false, "confidence": 4, "reasoning": "A bank."}'  # an older prompt's answer: no quote


def ticking_clock(step: float = 0.25):
    """A clock that moves `step` seconds per reading: every timed call takes exactly `step`."""
    counter = itertools.count()
    return lambda: next(counter) * step


def candidate(name: str, llm: ScriptedLLM, evidence, classifier=CPG, model: str = "m") -> Candidate:
    spec = CandidateSpec(name, model, None, classifier.name, classifier.prompt_version, "static")
    return Candidate(spec, classifier, llm, evidence)


def by_domain_llm(**extra: object) -> ScriptedLLM:
    return ScriptedLLM(YES, by_domain={"bank.com": NO}, tokens=(100, 20), **extra)  # type: ignore[arg-type]


async def test_candidates_sharing_a_provider_search_each_domain_once_and_are_scored() -> None:
    search, progress = StaticSearch(), []
    evidence = LiveEvidence(search, "static")
    first, second = by_domain_llm(), ScriptedLLM(YES, tokens=(100, 20))
    run = Evaluation(LABELS, [candidate("one", first, evidence), candidate("two", second, evidence)],
                     FixedPricing(1.0, 2.0), on_progress=lambda done, total: progress.append((done, total)))
    outcomes = await evaluate(run)
    assert sorted(search.queries) == sorted(i.domain for i in LABELS)  # not twice
    assert [o.verdict for o in outcomes["one"]] == ["yes", "no", "yes"]
    assert [o.correct for o in outcomes["two"]] == [True, False, True]
    assert outcomes["one"][0].cost_usd == pytest.approx((100 * 1.0 + 20 * 2.0) / 1e6)
    assert progress[0] == (0, 6) and progress[-1] == (6, 6)
    # Scored on the worker's path: the quote is checked, and an answer without one keeps confidence 2.
    assert [(o.quote_status, o.confidence) for o in outcomes["one"]] == [
        (QuoteStatus.VERIFIED, 5), (QuoteStatus.NO_QUOTE, 2), (QuoteStatus.VERIFIED, 5)]
    assert outcomes["one"][0].quote == "makes and sells packaged snacks"


async def test_recorded_evidence_replays_without_search_and_missing_domains_are_refused() -> None:
    snapshots, search = InMemorySnapshots(), StaticSearch()
    await evaluate(Evaluation(LABELS, [candidate("one", by_domain_llm(), LiveEvidence(search, "static", snapshots))],
                              FixedPricing(0, 0)))
    assert set(snapshots.recorded["static"]) == {i.domain for i in LABELS}
    searched = len(search.queries)
    llm = by_domain_llm()
    replayed = ReplayedEvidence(snapshots, "static", [i.domain for i in LABELS])
    outcomes = await evaluate(Evaluation(LABELS, [candidate("one", llm, replayed)], FixedPricing(0, 0)))
    assert len(search.queries) == searched and len(llm.history) == 3
    asked = next(c.user for c in llm.history if "Domain: snacks.com\n" in c.user)
    assert "snacks.com makes and sells packaged snacks and drinks." in asked
    assert [o.verdict for o in outcomes["one"]] == ["yes", "no", "yes"]
    with pytest.raises(MissingSnapshots, match="1 domain.*new.com.*--record"):
        ReplayedEvidence(snapshots, "static", ["snacks.com", "new.com"])
    with pytest.raises(MissingSnapshots):
        ReplayedEvidence(snapshots, "tavily", ["snacks.com"])


async def test_a_failed_search_is_recorded_and_the_domain_is_still_asked_as_the_worker_would() -> None:
    snapshots = InMemorySnapshots()
    llm = by_domain_llm()
    evidence = LiveEvidence(StaticSearch(ProviderError("search down")), "static", snapshots, clock=ticking_clock())
    outcomes = await evaluate(Evaluation(LABELS[:1], [candidate("one", llm, evidence)], FixedPricing(0, 0)))
    assert snapshots.recorded["static"]["snacks.com"].error == "search down"
    assert snapshots.recorded["static"]["snacks.com"].evidence == ()
    assert outcomes["one"][0].verdict == "yes" and outcomes["one"][0].search_seconds == 0.25
    assert "no evidence could be gathered" in llm.history[0].user


async def test_a_cached_run_makes_no_llm_call_and_reports_the_same_figures() -> None:
    cache, evidence = InMemoryCompletionCache(), LiveEvidence(StaticSearch(), "static", clock=ticking_clock())

    def run(llm: ScriptedLLM) -> Evaluation:
        return Evaluation(LABELS, [candidate("one", llm, evidence)], FixedPricing(1, 1), cache=cache,
                          clock=ticking_clock(0.5))

    first_llm, second_llm = by_domain_llm(), by_domain_llm()
    first = (await evaluate(run(first_llm)))["one"]
    second = (await evaluate(run(second_llm)))["one"]
    assert len(first_llm.history) == 3 and second_llm.history == []
    assert all(o.from_cache for o in second) and not any(o.from_cache for o in first)
    assert [dataclasses.replace(o, from_cache=False) for o in second] == list(first)
    assert first[0].llm_seconds == 0.5  # the original call's time, kept for reruns


async def test_failures_are_kept_apart_and_only_answers_are_cached() -> None:
    cache = InMemoryCompletionCache()
    llm = ScriptedLLM(YES, by_domain={"bank.com": "I cannot say.", "soap.com": ProviderError("timed out")},
                      tokens=(50, 5))
    outcomes = (await evaluate(Evaluation(LABELS, [candidate("one", llm, LiveEvidence(StaticSearch(), "s"))],
                                          FixedPricing(1, 1), cache=cache)))["one"]
    kinds = {o.domain: o.kind for o in outcomes}
    assert kinds == {"snacks.com": OutcomeKind.ANSWERED, "bank.com": OutcomeKind.UNPARSEABLE,
                     "soap.com": OutcomeKind.FAILED}
    unparseable = next(o for o in outcomes if o.domain == "bank.com")
    assert unparseable.prompt_tokens == 50 and "unreadable model output" in (unparseable.error or "")
    failed = next(o for o in outcomes if o.domain == "soap.com")
    assert failed.cost_usd == 0.0 and "timed out" in (failed.error or "")
    assert len(cache.entries) == 2  # the garbage was paid for: cached; the timeout was not


async def test_the_cache_key_changes_with_anything_sent_to_the_model() -> None:
    spec = CandidateSpec("one", "m", None, "cpg", CPG.prompt_version, "s")
    evidence = [Evidence("https://a.com", "A", "snacks")]
    key = completion_key(spec, CPG, "a.com", evidence)
    assert key == completion_key(dataclasses.replace(spec, name="renamed"), CPG, "a.com", evidence)
    others = [
        completion_key(dataclasses.replace(spec, model="m2"), CPG, "a.com", evidence),
        completion_key(dataclasses.replace(spec, api_base="http://127.0.0.1:1"), CPG, "a.com", evidence),
        completion_key(spec, dataclasses.replace(CPG, prompt_version="v2"), "a.com", evidence),
        completion_key(spec, dataclasses.replace(CPG, system_prompt=CPG.system_prompt + "!"), "a.com", evidence),
        completion_key(spec, CPG, "b.com", evidence),
        completion_key(spec, CPG, "a.com", [Evidence("https://a.com", "A", "soap")]),
        completion_key(dataclasses.replace(spec, max_tokens=16), CPG, "a.com", evidence),
        completion_key(spec, dataclasses.replace(CPG, definition=CPG.definition + " More."), "a.com", evidence),
    ]
    assert len({key, *others}) == 9


async def test_known_companies_answer_only_when_given_and_only_for_classifiers_that_use_them() -> None:
    llm = by_domain_llm()
    other = dataclasses.replace(CPG, name="other", uses_known_companies=False)
    evidence = LiveEvidence(StaticSearch(), "s")
    run = Evaluation(LABELS, [candidate("cpg", llm, evidence), candidate("other", by_domain_llm(), evidence, other)],
                     FixedPricing(0, 0), known={"soap.com": KnownCompany("soap.com", "Soap Co")})
    outcomes = await evaluate(run)
    soap = outcomes["cpg"][2]
    assert (soap.source, soap.answer, soap.confidence, soap.llm_seconds) == ("known_company", True, 5, None)
    assert llm.calls_about("soap.com") == 0
    assert outcomes["other"][2].source == "llm"


async def test_concurrency_bounds_the_domains_in_progress() -> None:
    labels = [LabelledDomain(f"d{i}.com", True) for i in range(12)]
    llm = ScriptedLLM(YES, delay=0.01)
    await evaluate(Evaluation(labels, [candidate("one", llm, LiveEvidence(StaticSearch(), "s"))],
                              FixedPricing(0, 0), concurrency=3))
    assert llm.max_in_flight == 3 and len(llm.history) == 12


async def test_one_candidate_failing_hard_does_not_hide_the_others_results() -> None:
    # A provider exception is a FAILED outcome, never an exception out of evaluate().
    llm = ScriptedLLM(RuntimeError("boom"))
    outcomes = await evaluate(Evaluation(LABELS, [candidate("one", llm, LiveEvidence(StaticSearch(), "s")),
                                                  candidate("two", by_domain_llm(), LiveEvidence(StaticSearch(), "s"))],
                                         FixedPricing(0, 0)))
    assert {o.kind for o in outcomes["one"]} == {OutcomeKind.FAILED}
    assert all(o.correct for o in outcomes["two"])


async def test_a_cache_that_cannot_be_written_stops_the_run_instead_of_failing_domains() -> None:
    class FullDisk(InMemoryCompletionCache):
        def put(self, key: str, completion: object) -> None:
            raise OSError(28, "No space left on device")

    run = Evaluation(LABELS[:1], [candidate("one", by_domain_llm(), LiveEvidence(StaticSearch(), "s"))],
                     FixedPricing(0, 0), cache=FullDisk())
    with pytest.raises(ExceptionGroup) as raised:
        await evaluate(run)
    assert raised.group_contains(OSError)


async def test_a_resumed_recording_searches_only_what_is_missing_or_failed() -> None:
    snapshots, search = InMemorySnapshots(), StaticSearch()
    snapshots.save("s", "snacks.com", GatheredEvidence((Evidence("https://snacks.com", "old"),), 0.1))
    snapshots.save("s", "bank.com", GatheredEvidence((), 0.1, error="timed out"))
    llm = by_domain_llm()
    await evaluate(Evaluation(LABELS, [candidate("one", llm, LiveEvidence(search, "s", snapshots))], FixedPricing(0, 0)))
    assert sorted(search.queries) == ["bank.com", "soap.com"]
    assert "old" in next(c.user for c in llm.history if "Domain: snacks.com\n" in c.user)


class _PoisonSearch:
    name = "poison"

    async def gather(self, domain: str) -> list[Evidence]:
        return [Evidence(f"https://{domain}/\ud800", "Snacks\x00", "crisps \udcff")]


async def test_poison_evidence_and_answers_are_recorded_and_cached_storable(tmp_path) -> None:
    """The recording and the completion cache are UTF-8 files: a lone surrogate from a page or a
    model must not stop the run (a cache that cannot be written stops it) or fail the domain."""
    from firmsift.adapters.files.completion_cache import CompletionCacheFile
    from firmsift.adapters.files.evidence_snapshots import SnapshotFiles

    snapshots, cache = SnapshotFiles(tmp_path / "evidence"), CompletionCacheFile(tmp_path / "completions.jsonl")
    llm = ScriptedLLM('{"is_cpg": true, "confidence": 5, "reasoning": "Crisps \\ud800"}\ud800')
    evidence = LiveEvidence(_PoisonSearch(), "poison", snapshots)
    [outcome] = (await evaluate(Evaluation(LABELS[:1], [candidate("one", llm, evidence)], FixedPricing(0, 0),
                                           cache=cache)))["one"]
    assert outcome.kind is OutcomeKind.ANSWERED and outcome.verdict == "yes"
    recorded = SnapshotFiles(tmp_path / "evidence").load("poison")["snacks.com"].evidence
    assert recorded == (Evidence("https://snacks.com/\ufffd", "Snacks\ufffd", "crisps \ufffd"),)
    again = ScriptedLLM(YES)
    replayed = ReplayedEvidence(SnapshotFiles(tmp_path / "evidence"), "poison", ["snacks.com"])
    [rerun] = (await evaluate(Evaluation(LABELS[:1], [candidate("one", again, replayed)], FixedPricing(0, 0),
                                         cache=CompletionCacheFile(tmp_path / "completions.jsonl"))))["one"]
    assert again.history == [] and rerun.from_cache and rerun.verdict == "yes"  # the answer was cached

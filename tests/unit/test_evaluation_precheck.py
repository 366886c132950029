"""The pre-check in an evaluation run: once per domain for every candidate, ended domains kept from
the LLM and out of the model's figures, statuses recorded with the snapshots and replayed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from firmsift.adapters.files.classifiers import load_catalog
from firmsift.adapters.files.evidence_snapshots import SITE_STATUS_FILE, SnapshotFiles
from firmsift.adapters.files.jsonl import JsonlFileError
from firmsift.adapters.files.site_signatures import load_signatures
from firmsift.adapters.memory.evaluation import InMemorySnapshots
from firmsift.adapters.memory.homepage import InMemoryHomepage
from firmsift.adapters.memory.providers import FixedPricing, ScriptedLLM, StaticSearch
from firmsift.adapters.memory.resolver import InMemoryResolver
from firmsift.domain.evaluation import GatheredEvidence, LabelledDomain, OutcomeKind
from firmsift.domain.evaluation_scores import score
from firmsift.domain.site_status import SiteStatus, SiteVerdict
from firmsift.services.evaluation_precheck import LiveSiteStatuses, ReplayedSiteStatuses
from firmsift.services.evaluation_run import Candidate, CandidateSpec, Evaluation, LiveEvidence, evaluate
from firmsift.services.precheck import Precheck
from tests.support.site_fixtures import DEFAULT_DNS, dns_facts, http_facts, load

pytestmark = pytest.mark.anyio
CPG = load_catalog()["cpg"]
YES = '{"is_cpg": true, "confidence": 5, "reasoning": "Makes snacks.", "quote": "makes and sells packaged snacks"}'
CASES = {  # fixture -> its label: a parked CPG company is the pre-check's miss
    "parked_dns_sedo_ns": True, "no_dns_nxdomain": False, "unreachable_refused": False,
    "blocked_bare_403": True, "unknown_servfail": False,
}
LIVE = LabelledDomain("snacks.com", True)  # not in the resolver's table: every name answers


class Site:
    """The pre-check's DNS and homepage, from the fixtures of tests/fixtures/sites."""

    def __init__(self) -> None:
        from firmsift.entrypoints.wiring.memory import ANY_NAME

        self.resolver, self.homepage = InMemoryResolver(default=ANY_NAME), InMemoryHomepage()
        self.labels = [LIVE]
        for name, label in CASES.items():
            case = load(name)
            dns = dns_facts(case.get("dns", DEFAULT_DNS))
            self.resolver.add(case["domain"], dns)
            self.resolver.add(f"www.{case['domain']}", dns_facts(case["www_dns"]) if "www_dns" in case else dns)
            if (http := http_facts(case)) is not None:
                self.homepage.add(case["domain"], http)
            self.labels.append(LabelledDomain(case["domain"], label))
        self.precheck = Precheck(self.resolver, self.homepage, load_signatures())


def candidate(name: str, llm: ScriptedLLM, evidence: LiveEvidence) -> Candidate:
    return Candidate(CandidateSpec(name, "m", None, "cpg", CPG.prompt_version, "static"), CPG, llm, evidence)


async def test_ended_domains_skip_the_llm_and_the_model_s_figures_and_each_domain_is_looked_at_once() -> None:
    site, search = Site(), StaticSearch()
    evidence = LiveEvidence(search, "static")
    first, second = ScriptedLLM(YES), ScriptedLLM(YES)
    run = Evaluation(site.labels, [candidate("one", first, evidence), candidate("two", second, evidence)],
                     FixedPricing(0, 0), site_statuses=LiveSiteStatuses(site.precheck))
    outcomes = await evaluate(run)

    # Two candidates, one look per domain: its name and www., once each.
    assert sorted(site.resolver.history) == sorted(n for i in site.labels for n in (i.domain, f"www.{i.domain}"))
    statuses = {o.domain: o.site_status for o in outcomes["one"]}
    assert statuses == {"snacks.com": "live", "salty-pretzel.example": "parked", "never-registered.example": "no_dns",
                        "closed-shop.example": "unreachable", "quiet-brand.example": "blocked",
                        "broken-dnssec.example": "unknown"}
    asked = {"snacks.com", "quiet-brand.example", "broken-dnssec.example"}  # live, blocked and unknown go on
    for llm in (first, second):
        assert sorted(d for d in statuses if llm.calls_about(d)) == sorted(asked)
    assert sorted(search.queries) == sorted(asked)
    ended = {o.domain: o for o in outcomes["one"] if o.kind is OutcomeKind.ENDED}
    assert set(ended) == set(statuses) - asked
    assert all(o.source == "precheck" and o.answer is None and o.llm_seconds is None for o in ended.values())
    assert ended["salty-pretzel.example"].reason.startswith("parked")

    # Scored on the 3 domains asked (all answered yes, 2 labelled yes): the ended ones are no answer of the model.
    figures = score(outcomes["one"])
    assert (figures.total, figures.correct, figures.labelled_yes, figures.false_positives) == (3, 2, 2, 1)
    assert figures.accuracy == 2 / 3 and figures.recall == 1.0
    assert figures.ended_domains == ("closed-shop.example", "never-registered.example", "salty-pretzel.example")
    assert figures.precheck_misses == ("salty-pretzel.example",)


async def test_statuses_recorded_with_the_evidence_replay_without_a_dns_lookup() -> None:
    site, snapshots = Site(), InMemorySnapshots()
    recorded = LiveSiteStatuses(site.precheck, record_to=snapshots)
    await evaluate(Evaluation(site.labels, [candidate("one", ScriptedLLM(YES), LiveEvidence(StaticSearch(), "static"))],
                              FixedPricing(0, 0), site_statuses=recorded))
    assert {d: v.status.value for d, v in snapshots.site_statuses.items()}["salty-pretzel.example"] == "parked"
    looked = len(site.resolver.history)

    llm = ScriptedLLM(YES)
    outcomes = await evaluate(Evaluation(site.labels, [candidate("one", llm, LiveEvidence(StaticSearch(), "static"))],
                                         FixedPricing(0, 0), site_statuses=ReplayedSiteStatuses(snapshots)))
    assert len(site.resolver.history) == looked and not llm.calls_about("salty-pretzel.example")
    assert {o.domain: o.site_status for o in outcomes["one"]} == {d: v.status.value
                                                                 for d, v in snapshots.site_statuses.items()}


async def test_snapshots_recorded_before_the_pre_check_replay_as_not_pre_checked() -> None:
    site, llm = Site(), ScriptedLLM(YES)
    outcomes = await evaluate(Evaluation(site.labels, [candidate("one", llm, LiveEvidence(StaticSearch(), "static"))],
                                         FixedPricing(0, 0), site_statuses=ReplayedSiteStatuses(InMemorySnapshots())))
    assert all(o.site_status is None and o.kind is OutcomeKind.ANSWERED for o in outcomes["one"])
    assert all(llm.calls_about(i.domain) for i in site.labels) and not site.resolver.history


async def test_a_resumed_recording_looks_again_only_where_the_dns_lookup_failed() -> None:
    site, snapshots = Site(), InMemorySnapshots()
    snapshots.save_site_status("snacks.com", SiteVerdict(SiteStatus.PARKED, "parked (recorded earlier)"))
    snapshots.save_site_status("quiet-brand.example", SiteVerdict(SiteStatus.UNKNOWN, "unknown: its DNS lookup failed"))
    statuses = LiveSiteStatuses(site.precheck, record_to=snapshots)
    assert (await statuses.status_for("snacks.com")).reason == "parked (recorded earlier)"
    assert (await statuses.status_for("quiet-brand.example")).status is SiteStatus.BLOCKED
    assert site.resolver.history == ["quiet-brand.example", "www.quiet-brand.example"]


def test_snapshot_files_keep_statuses_beside_the_evidence_and_old_folders_have_none(tmp_path: Path) -> None:
    files = SnapshotFiles(tmp_path)
    files.save("static", "a.example", GatheredEvidence((), 0.5))
    assert files.load_site_statuses() == {}  # recorded before the pre-check: nothing pre-checked
    moved = SiteVerdict(SiteStatus.REDIRECTED, "redirects to another site: b.example", "b.example")
    files.save_site_status("a.example", SiteVerdict(SiteStatus.LIVE, "live: the homepage answered HTTP 200"))
    files.save_site_status("a.example", moved)  # the latest line wins
    assert SnapshotFiles(tmp_path).load_site_statuses() == {"a.example": moved}
    assert set(files.load("static")) == {"a.example"}  # the evidence file is untouched


@pytest.mark.parametrize("record", [{"domain": "a.example", "site_status": "gone", "reason": "x"},
                                    {"domain": "a.example", "site_status": "live", "reason": 3},
                                    {"domain": "a.example", "site_status": "live", "reason": "x", "redirected_to": 1}])
def test_a_malformed_status_record_is_a_clear_error(tmp_path: Path, record: dict[str, object]) -> None:
    (tmp_path / SITE_STATUS_FILE).write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(JsonlFileError, match=f"{SITE_STATUS_FILE}: a record is malformed"):
        SnapshotFiles(tmp_path).load_site_statuses()

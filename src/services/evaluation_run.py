"""Running candidates over labelled domains: evidence once per search provider, answers by the worker's path."""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from firmsift.domain.clock import utc_now
from firmsift.domain.errors import FirmsiftError
from firmsift.domain.evaluation import CachedCompletion, GatheredEvidence, LabelledDomain, Outcome, OutcomeKind
from firmsift.domain.known_companies import known_company, known_company_reason
from firmsift.domain.model import Classifier, Completion, Evidence, KnownCompany, ResultStatus
from firmsift.domain.outside_text import storable_completion, storable_error, storable_evidence
from firmsift.domain.prompt import answer_schema, build_prompt
from firmsift.machinery.inflight import InFlight
from firmsift.services.asking import ask_llm
from firmsift.services.precheck import ENDING_STATUSES

_KEY_MARKER = "marker"

if TYPE_CHECKING:
    from firmsift.ports.evaluation import CompletionCache, EvidenceSnapshots
    from firmsift.ports.providers import LLM, Pricing, Search
    from firmsift.services.evaluation_precheck import SiteStatuses


class EvidenceSource(Protocol):
    async def evidence_for(self, domain: str) -> GatheredEvidence: ...


class MissingSnapshots(FirmsiftError):
    """Replay was asked for, but some domains were never recorded for a provider."""

    def __init__(self, provider: str, domains: Sequence[str]) -> None:
        self.provider, self.domains = provider, tuple(domains)
        shown = ", ".join(self.domains[:10]) + (" ..." if len(self.domains) > 10 else "")
        super().__init__(f"no recorded evidence from search provider {provider!r} for {len(self.domains)} "
                         f"domain(s): {shown}; run with --record first")


class LiveEvidence:
    """Searches each domain once per run, however many candidates share this provider, and
    records what it found when given snapshots to record into."""

    def __init__(self, search: Search, provider: str, record_to: EvidenceSnapshots | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.search, self.provider, self.record_to, self.clock = search, provider, record_to, clock
        # Recording resumes: what an earlier (interrupted) recording found is kept; only the
        # domains it has not recorded, or whose search failed, are searched again.
        self._gathered: dict[str, GatheredEvidence] = {
            domain: found for domain, found in (record_to.load(provider) if record_to else {}).items()
            if found.error is None
        }
        self._inflight: InFlight[GatheredEvidence] = InFlight()

    async def evidence_for(self, domain: str) -> GatheredEvidence:
        if domain not in self._gathered:
            self._gathered[domain], _ = await self._inflight.run(domain, lambda: self._gather(domain))
        return self._gathered[domain]

    async def _gather(self, domain: str) -> GatheredEvidence:
        started = self.clock()
        try:
            found = GatheredEvidence(tuple(storable_evidence(await self.search.gather(domain))), self.clock() - started)
        except Exception as error:  # noqa: BLE001 - as in the worker: carry on without evidence
            found = GatheredEvidence((), self.clock() - started, error=storable_error(error))
        if self.record_to is not None:
            self.record_to.save(self.provider, domain, found)
        return found


class ReplayedEvidence:
    """Evidence recorded earlier: no search call at all."""

    def __init__(self, snapshots: EvidenceSnapshots, provider: str, domains: Sequence[str]) -> None:
        self._recorded = snapshots.load(provider)
        missing = [d for d in domains if d not in self._recorded]
        if missing:
            raise MissingSnapshots(provider, missing)

    async def evidence_for(self, domain: str) -> GatheredEvidence:
        return self._recorded[domain]


@dataclass(frozen=True)
class CandidateSpec:
    """What a candidate is, as reports show it."""

    name: str
    model: str
    api_base: str | None
    classifier: str
    prompt_version: str
    search: str  # the search provider's name
    max_tokens: int | None = None  # the answer's token limit, part of the request


@dataclass
class Candidate:
    spec: CandidateSpec
    classifier: Classifier
    llm: LLM
    evidence: EvidenceSource


@dataclass
class Evaluation:
    """One run: every candidate over every labelled domain."""

    labels: Sequence[LabelledDomain]
    candidates: Sequence[Candidate]
    pricing: Pricing
    cache: CompletionCache | None = None
    known: Mapping[str, KnownCompany] = field(default_factory=dict)  # empty: no known-company shortcut
    site_statuses: SiteStatuses | None = None  # the pre-check, once per domain for the run (None: off)
    concurrency: int = 8  # domains (search + LLM) in progress at once, over all candidates
    on_progress: Callable[[int, int], None] = lambda done, total: None
    clock: Callable[[], float] = time.monotonic
    new_marker: Callable[[], str] = lambda: secrets.token_hex(12)


async def evaluate(run: Evaluation) -> dict[str, tuple[Outcome, ...]]:
    """Candidate name -> one outcome per labelled domain, in label order."""
    slots = asyncio.Semaphore(run.concurrency)
    total = len(run.labels) * len(run.candidates)
    done = 0
    run.on_progress(done, total)

    async def one(candidate: Candidate, item: LabelledDomain) -> Outcome:
        nonlocal done
        async with slots:
            outcome = await _outcome(run, candidate, item)
        done += 1
        run.on_progress(done, total)
        return outcome

    async with asyncio.TaskGroup() as group:
        tasks = {c.spec.name: [group.create_task(one(c, item)) for item in run.labels] for c in run.candidates}
    return {name: tuple(task.result() for task in found) for name, found in tasks.items()}


async def _outcome(run: Evaluation, candidate: Candidate, item: LabelledDomain) -> Outcome:
    classifier = candidate.classifier
    company = known_company(item.domain, run.known) if classifier.uses_known_companies else None
    if company is not None:
        return Outcome(item.domain, item.label, OutcomeKind.ANSWERED, answer=True, confidence=5,
                       reason=known_company_reason(company), source="known_company")
    # As the worker: after the known-company shortcut, before the search and the LLM.
    verdict = await run.site_statuses.status_for(item.domain) if run.site_statuses is not None else None
    site_status = verdict.status.value if verdict is not None else None
    if verdict is not None and verdict.status in ENDING_STATUSES:
        return Outcome(item.domain, item.label, OutcomeKind.ENDED, reason=verdict.reason, source="precheck",
                       site_status=site_status)
    gathered = await candidate.evidence.evidence_for(item.domain)
    key = completion_key(candidate.spec, classifier, item.domain, gathered.evidence)
    llm = _TimedCachingLLM(candidate.llm, run.cache, key, run.clock)
    # No wait for a slot inside: the run's own semaphore already bounds the calls in flight.
    answer, completion = await ask_llm(item.domain, classifier, list(gathered.evidence), llm, pricing=run.pricing,
                                       slots=asyncio.Semaphore(1), marker=run.new_marker(), now=utc_now)
    llm.keep()
    common: dict[str, Any] = {"search_seconds": gathered.seconds, "search_error": gathered.error,
                              "llm_seconds": llm.seconds, "error": answer.error, "site_status": site_status}
    if completion is None:
        return Outcome(item.domain, item.label, OutcomeKind.FAILED, **common)
    # Priced by ask_llm, as a worker's answers are (a cached completion: what it cost when paid).
    common |= {"prompt_tokens": answer.tokens_in or 0, "completion_tokens": answer.tokens_out or 0,
               "from_cache": llm.from_cache, "cost_usd": answer.cost_usd}
    if answer.status is not ResultStatus.DONE:
        return Outcome(item.domain, item.label, OutcomeKind.UNPARSEABLE, raw_output=answer.raw_output, **common)
    return Outcome(item.domain, item.label, OutcomeKind.ANSWERED, answer=answer.answer,
                   confidence=answer.confidence, reason=answer.reason, quote=answer.quote,
                   quote_status=answer.quote_status, **common)


def completion_key(spec: CandidateSpec, classifier: Classifier, domain: str, evidence: Sequence[Evidence]) -> str:
    """The LLM cache key: (model, API base, answer token limit, prompt hash, evidence hash).

    The prompt hash covers the messages exactly as they are sent (templates, prompt version,
    how evidence is fenced) and the answer schema, so any change to what the model is asked
    never reuses an old answer. Only the per-call random marker is held fixed for the hash.
    """
    system, user = build_prompt(classifier, domain, list(evidence), _KEY_MARKER)
    prompt = [classifier.prompt_version, system, user, answer_schema(classifier)]
    gathered = [domain, [[e.url, e.title, e.snippet] for e in evidence]]
    return _sha256([spec.model, spec.api_base or "", spec.max_tokens, _sha256(prompt), _sha256(gathered)])


def _sha256(value: object) -> str:
    return hashlib.sha256(json.dumps(value, ensure_ascii=False).encode()).hexdigest()


class _TimedCachingLLM:
    """The candidate's LLM for one domain: answered from the cache when this exact question was
    paid for before, otherwise asked (keep() caches it). Remembers how long the answer took."""

    def __init__(self, llm: LLM, cache: CompletionCache | None, key: str, clock: Callable[[], float]) -> None:
        self.model = llm.model
        self._llm, self._cache, self._key, self._clock = llm, cache, key, clock
        self.seconds: float | None = None
        self.from_cache = False
        self.fresh: Completion | None = None  # a completion paid for in this run, to be cached

    async def complete(self, system: str, user: str, *, json_schema: dict[str, Any]) -> Completion:
        cached = self._cache.get(self._key) if self._cache is not None else None
        if cached is not None:
            self.seconds, self.from_cache = cached.seconds, True
            return Completion(cached.text, cached.model, prompt_tokens=cached.prompt_tokens,
                              completion_tokens=cached.completion_tokens)
        started = self._clock()
        try:
            # Storable before it is cached: the cache file must be able to hold it.
            completion = storable_completion(await self._llm.complete(system, user, json_schema=json_schema))
        finally:
            self.seconds = self._clock() - started
        self.fresh = completion
        return completion

    def keep(self) -> None:
        """Cache the completion paid for in this call. Called after the answer is read, outside
        the call, so a cache that cannot be written stops the run instead of failing the domain."""
        if self._cache is not None and self.fresh is not None:
            self._cache.put(self._key, CachedCompletion(self.fresh.text, self.fresh.model, self.seconds or 0.0,
                                                        self.fresh.prompt_tokens, self.fresh.completion_tokens))

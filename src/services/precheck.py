"""The pre-check use-case: one cheap look at a domain (DNS, then its homepage) before paying the LLM.

`no_dns`, `unreachable` and `parked` end the domain here with no answer (source `precheck`),
cached for a shorter time than an answer. `blocked` and `live` go on to the LLM: a blocked site's
homepage provider refuses to cite its wall, so the search chain asks the next provider.
`redirected` records the target's registrable domain and, when the target already has a fresh
answer for the classifier, says so; that answer is reused only when the operator chose so.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from firmsift.domain.freshness import PRECHECK_MAX_AGE, is_fresh
from firmsift.domain.model import Answer, Classifier, DomainResult, ResultStatus, Source
from firmsift.domain.site_facts import DnsFacts, DnsOutcome, SiteFacts
from firmsift.domain.site_status import SiteStatus, SiteVerdict, bounded_reason, site_status

if TYPE_CHECKING:
    from firmsift.domain.site_signatures import Signatures
    from firmsift.ports.homepage_look import HomepageLooker
    from firmsift.ports.repository import AnswerStore
    from firmsift.ports.resolver import Resolver
    from firmsift.services.dns_trust import DnsTrust

log = logging.getLogger(__name__)

# The statuses that end a domain without an LLM call: nothing there could answer for a company.
ENDING_STATUSES = frozenset({SiteStatus.NO_DNS, SiteStatus.UNREACHABLE, SiteStatus.PARKED})
# Decided by DNS alone: the homepage is not fetched.
_DNS_VERDICTS = frozenset({SiteStatus.NO_DNS, SiteStatus.PARKED})


@dataclass(frozen=True)
class SiteCheck:
    """The domain's verdict, and what it means for the answer.

    `ended` is the domain's final (result, answer to cache) when the pre-check settles it;
    None when the LLM path goes on. `redirected_answer` is the redirect target's fresh answer,
    when it has one."""

    verdict: SiteVerdict
    ended: tuple[DomainResult, Answer | None] | None = None
    redirected_answer: Answer | None = None

    def mark(self, answer: Answer) -> Answer:
        """`answer` (from the LLM path) carrying this pre-check's findings."""
        return replace(answer, site_status=self.verdict.status.value, redirected_to=self.verdict.redirected_to,
                       redirected_answer=self.redirected_answer.answer if self.redirected_answer else None)


@dataclass
class Precheck:
    """What the pre-check asks (the resolver, the homepage) and how its outcomes are kept."""

    resolver: Resolver
    homepage: HomepageLooker
    signatures: Signatures
    max_age: timedelta = PRECHECK_MAX_AGE  # how long an ending outcome is cached
    reuse_redirect_answer: bool = False
    # Whether a negative DNS answer may end a domain (None: always; tests of the rule alone).
    trust: DnsTrust | None = None

    async def look(self, domain: str) -> SiteVerdict:
        """The domain's status: DNS for the name and www., then (unless DNS settled it, or gave no
        address to connect to) the homepage. A negative DNS answer the resolver cannot be trusted
        with makes the status unknown, not no_dns. Behind an outbound proxy the homepage, fetched
        through it, says it all (local DNS is not asked), but a failure there ends nothing."""
        if self.trust is not None and (why := self.trust.through_proxy()) is not None:
            unasked = DnsFacts(DnsOutcome.FAILED, detail=f"not looked up: {why}")
            looked = await self.homepage.look(domain)
            verdict = site_status(SiteFacts(domain=domain, dns=unasked, http=looked.http,
                                            registrable_domain=looked.registrable_domain), self.signatures)
            if verdict.status is SiteStatus.UNREACHABLE:
                # The proxy down, or refusing, reads the same as a dead site: a failure through it
                # ends nothing (a proxy outage must not end a list); what answered still counts.
                return SiteVerdict(SiteStatus.UNKNOWN, bounded_reason(f"unknown: through the proxy, {verdict.reason}"))
            return verdict
        dns, www_dns = await asyncio.gather(self.resolver.look_up(domain), self.resolver.look_up(f"www.{domain}"))
        facts = SiteFacts(domain=domain, dns=dns, www_dns=www_dns)
        verdict = site_status(facts, self.signatures)
        if self.trust is not None:
            self.trust.record(dns)
            if verdict.status is SiteStatus.NO_DNS and (why := await self.trust.doubt()) is not None:
                return SiteVerdict(SiteStatus.UNKNOWN, bounded_reason(f"unknown: DNS found no address, but {why}"))
        if verdict.status in _DNS_VERDICTS or not (dns.addresses or www_dns.addresses):
            return verdict  # settled by DNS, or nothing to connect to (the DNS failed: unreachable)
        looked = await self.homepage.look(domain)
        return site_status(replace(facts, http=looked.http, registrable_domain=looked.registrable_domain),
                           self.signatures)

    async def check(self, domain: str, classifier: Classifier, answers: AnswerStore, now: datetime) -> SiteCheck:
        verdict = await self.look(domain)
        log.info("pre-check", extra={"domain": domain, "site_status": verdict.status.value,
                                     "why": verdict.reason})
        if verdict.status in ENDING_STATUSES:
            answer = Answer(domain=domain, classifier=classifier.name, status=ResultStatus.DONE, answered_at=now,
                            source=Source.PRECHECK, reason=verdict.reason, site_status=verdict.status.value)
            return SiteCheck(verdict, ended=(DomainResult.from_answer(answer, Source.PRECHECK), answer))
        if verdict.status is not SiteStatus.REDIRECTED or verdict.redirected_to is None:
            return SiteCheck(verdict)
        target = verdict.redirected_to
        stored = (await answers.get_answers([target], classifier.name)).get(target)
        if stored is None or stored.answer is None or not is_fresh(stored, now, classifier.prompt_version):
            return SiteCheck(verdict)
        site = SiteCheck(verdict, redirected_answer=stored)
        if not self.reuse_redirect_answer:
            return site
        reused = site.mark(replace(stored, domain=domain, reason=f"redirects to {target}, whose answer is reused: "
                                                                 f"{stored.reason}"))
        return replace(site, ended=(DomainResult.from_answer(reused, Source.CACHE), None))

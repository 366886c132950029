"""Forgetting cached answers: for some domains, for a batch's domains or for a whole classifier,
every cached answer or only the pre-check's outcomes (no_dns, unreachable, parked). The next job
about a forgotten domain takes the paid path again; people's corrections are not touched.

What it is for: a resolver that lied ended a list as no_dns, a prompt was fixed, a site came back."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from firmsift.domain.errors import InvalidRequest
from firmsift.domain.normalize import normalize_domains
from firmsift.services.batches import result_pages
from firmsift.services.human_answers import known_classifier

if TYPE_CHECKING:
    from firmsift.domain.batches import Batch
    from firmsift.domain.model import Classifier
    from firmsift.ports.batches import BatchStore
    from firmsift.ports.repository import ForgetsAnswers


@dataclass(frozen=True)
class ForgetAnswers:
    """What to forget: exactly one of `domains`, `batch` (a batch already found for the caller;
    its classifier's answers) or `everything` (the classifier's whole cache)."""

    classifier: str
    domains: tuple[object, ...] | None = None
    batch: Batch | None = None
    everything: bool = False
    only_precheck: bool = False


async def forget_answers(command: ForgetAnswers, *, catalog: Mapping[str, Classifier], answers: ForgetsAnswers,
                         batches: BatchStore) -> int:
    """How many cached answers were forgotten. InvalidRequest unless exactly one scope is given,
    InvalidDomains (each listed) for a bad domain, UnknownClassifier for an unknown classifier."""
    scopes = [command.domains is not None, command.batch is not None, command.everything]
    if sum(scopes) != 1:
        raise InvalidRequest("say what to forget: domains, a batch, or all of a classifier's answers (one of them)")
    if command.batch is not None:
        classifier = command.batch.classifier
        forgotten = 0
        async for page in result_pages(command.batch, batches):
            domains = {row.row.domain for row in page if row.row.domain is not None}
            forgotten += await answers.forget_answers(classifier, domains, only_precheck=command.only_precheck)
        return forgotten
    classifier = known_classifier(command.classifier, catalog)
    if command.everything:
        return await answers.forget_answers(classifier, None, only_precheck=command.only_precheck)
    assert command.domains is not None
    if not command.domains:
        raise InvalidRequest("domains is empty: name at least one domain to forget")
    domains = normalize_domains(command.domains)
    return await answers.forget_answers(classifier, domains, only_precheck=command.only_precheck)

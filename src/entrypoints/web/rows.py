"""A batch's rows as the web app shows them: the caller's cells, the answer fields of the export
(batch_results.answer_fields), the evidence links that are safe to follow, a person's correction
of the domain made since, and why a row is worth a human look (the review queue)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from firmsift.domain.batch_results import RowResult, answer_fields, input_columns
from firmsift.domain.batches import Batch
from firmsift.domain.human_answers import HUMAN_CONFIDENCE, HumanAnswer
from firmsift.domain.known_companies import known_company, with_parents
from firmsift.domain.model import Classifier, KnownCompany
from firmsift.ports.batches import BatchStore
from firmsift.ports.human_answers import HumanAnswerStore
from firmsift.ports.repository import KnownCompanies

LOW_CONFIDENCE = 2  # a confidence at or below this is worth a look


class RowViews:
    """A batch's rows as row_view shows them, with the known companies and human answers of their domains."""

    def __init__(self, catalog: Mapping[str, Classifier], batches: BatchStore, known: KnownCompanies,
                 humans: HumanAnswerStore) -> None:
        self.catalog, self.batches, self.known, self.humans = catalog, batches, known, humans

    async def page(self, batch: Batch, start: int, limit: int) -> list[dict[str, Any]]:
        """Up to `limit` rows from the row at position `start`."""
        return await self.views(batch, await self.batches.result_page(batch.id, after=start - 1, limit=limit))

    async def views(self, batch: Batch, items: list[RowResult]) -> list[dict[str, Any]]:
        uses_known = batch.classifier in self.catalog and self.catalog[batch.classifier].uses_known_companies
        known_companies = await known_for(uses_known, items, self.known)
        humans = await humans_for(batch.classifier, items, self.humans)
        return [row_view(batch, item, known_companies, humans) for item in items]


def row_view(batch: Batch, item: RowResult, known: Mapping[str, KnownCompany],
             humans: Mapping[str, HumanAnswer]) -> dict[str, Any]:
    """What a table row and its expanded details show; every value is escaped by the template.
    A human answer of the row's domain (`humans`, by domain) is shown as the row's answer, with
    source `human`: the batch's own answer stays in the details and in the exports."""
    fields = answer_fields(item)
    values = json.loads(item.row.original)
    cells = [str(v) for v in values] if batch.columns is not None else [
        values if isinstance(values, str) else json.dumps(values, ensure_ascii=False)]
    fields["evidence"] = [{"url": e["url"], "title": e["title"] or e["url"], "followable": _followable(e["url"])}
                          for e in fields["evidence"]]
    answer = fields["answer"]
    human = humans.get(item.row.domain or "")
    return {
        "index": item.row.position,
        "line": item.row.line,
        "cells": list(zip(input_columns(batch), cells)),
        "answer_text": "" if answer is None else answer_word(answer),
        "review": review_reasons(fields, known_company(fields["classified_domain"] or "", known)),
        **fields,
        "human": None if human is None else {
            "answer_text": "yes" if human.answer else "no", "note": human.note,
            "corrected_at": human.corrected_at.isoformat()[:19].replace("T", " ")},
        "shown_answer": "" if human is None and answer is None else (
            answer_word(human.answer if human is not None else answer)),
        "shown_source": "human" if human is not None else fields["source"],
        "shown_confidence": HUMAN_CONFIDENCE if human is not None else fields["confidence"],
        "batch_id": batch.id,
    }


def answer_word(answer: bool) -> str:
    return "yes" if answer else "no"


def review_reasons(fields: Mapping[str, Any], company: KnownCompany | None) -> list[str]:
    """Why a row's answer deserves a human look; empty when nothing stands out."""
    reasons = []
    if fields["status"] == "FAILED":
        reasons.append(f"failed: {fields.get('error') or 'no answer'}")
    confidence = fields.get("confidence")
    if confidence is not None and confidence <= LOW_CONFIDENCE:
        reasons.append(f"low confidence ({confidence})")
    if fields.get("quote_status") == "unverified":
        reasons.append("quote not found in the evidence")
    if company is not None and fields.get("answer") is False:
        reasons.append(f"answered no, but {company.domain} is a listed known company")
    redirected = fields.get("redirected_answer")
    if redirected is not None and fields.get("answer") is not None and redirected != fields["answer"]:
        reasons.append(f"redirects to {fields.get('redirected_to')}, which was answered "
                       f"{'yes' if redirected else 'no'}")
    return reasons


async def known_for(batch_uses_known: bool, items: Iterable[RowResult], known: KnownCompanies) -> dict[str, KnownCompany]:
    """The known companies of the rows' domains (and their parents), when the classifier uses them."""
    domains = [item.row.domain for item in items if item.row.domain]
    if not batch_uses_known or not domains:
        return {}
    return await known.find_known(with_parents(domains))


async def humans_for(classifier: str, items: Iterable[RowResult], store: HumanAnswerStore) -> dict[str, HumanAnswer]:
    """The current human answers of the rows' domains, by domain."""
    domains = [item.row.domain for item in items if item.row.domain]
    return await store.human_answers(domains, classifier) if domains else {}


def _followable(url: str) -> bool:
    """Only web addresses become links: a `javascript:` or `data:` URL from a page is shown as text."""
    return url.lower().startswith(("https://", "http://"))

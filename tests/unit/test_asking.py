"""One question to the LLM: what a failed or unreadable answer records, and how its quote is checked."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import pytest

from firmsift.adapters.files.classifiers import load_catalog
from firmsift.adapters.memory.providers import FixedPricing, ScriptedLLM
from firmsift.domain.model import Evidence, QuoteStatus, ResultStatus
from firmsift.domain.prompt import MAX_EVIDENCE_CHARS
from firmsift.domain.quotes import MAX_QUOTE_CHARS
from firmsift.services.asking import ask_llm

PAGE = Evidence("https://acme.com/", "Acme", "Acme makes crunchy peanut butter, sold in grocery stores.")


async def ask(llm: ScriptedLLM, evidence: list[Evidence] | None = None, pricing: FixedPricing = FixedPricing(1.0, 2.0)):
    return await ask_llm("acme.com", load_catalog()["cpg"], evidence or [], llm, pricing=pricing,
                         slots=asyncio.Semaphore(1), marker="M", now=lambda: datetime(2026, 1, 1, tzinfo=UTC))


def reply(confidence: int, quote: str | None) -> str:
    document = {"is_cpg": True, "confidence": confidence, "reasoning": "r"}
    return json.dumps(document if quote is None else document | {"quote": quote})


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("evidence", "quote", "status", "confidence"),
    [
        ([PAGE], "makes crunchy PEANUT butter", QuoteStatus.VERIFIED, 5),
        ([PAGE], "makes crunchy peanut butter and jam", QuoteStatus.UNVERIFIED, 2),
        ([PAGE], None, QuoteStatus.NO_QUOTE, 2),  # an older prompt's answer: read, and said to have no quote
        ([], None, QuoteStatus.NO_EVIDENCE, 2),
        ([], "makes crunchy peanut butter", QuoteStatus.UNVERIFIED, 2),  # nothing it could come from
    ],
)
async def test_an_answer_keeps_its_confidence_only_with_a_quote_found_in_its_evidence(
        evidence: list[Evidence], quote: str | None, status: QuoteStatus, confidence: int) -> None:
    answer, _ = await ask(ScriptedLLM(reply(5, quote)), evidence)
    assert answer.status is ResultStatus.DONE and answer.answer is True
    assert (answer.quote_status, answer.confidence, answer.quote) == (status, confidence, quote)


@pytest.mark.anyio
async def test_a_quote_from_evidence_cut_off_before_the_prompt_does_not_verify() -> None:
    tail = "Acme also brews its own kombucha in glass bottles."
    long_page = Evidence("https://acme.com/", "Acme", "x " * MAX_EVIDENCE_CHARS + tail)
    answer, _ = await ask(ScriptedLLM(reply(5, tail)), [long_page])
    assert answer.quote_status is QuoteStatus.UNVERIFIED and answer.confidence == 2


@pytest.mark.anyio
async def test_a_long_quote_is_kept_cut_between_words_and_does_not_verify() -> None:
    sentence = "Acme makes crunchy peanut butter, sold in grocery stores. "
    page = Evidence("https://acme.com/", "Acme", sentence * 10)
    answer, _ = await ask(ScriptedLLM(reply(4, (sentence * 6).strip())), [page])
    assert answer.quote_status is QuoteStatus.UNVERIFIED and answer.confidence == 2
    assert len(answer.quote) <= MAX_QUOTE_CHARS and answer.quote.endswith("…")


@pytest.mark.anyio
async def test_an_unreadable_answer_quotes_its_start_cut_between_words_and_keeps_it_whole() -> None:
    raw = "I believe this company is probably a consumer goods maker " * 10
    answer, completion = await ask(ScriptedLLM(raw))

    assert answer.status is ResultStatus.FAILED and completion is not None
    assert answer.raw_output == raw
    began = answer.error.split("it began: ", 1)[1]
    assert began.endswith("…") and raw.startswith(began[:-1])
    assert raw[len(began) - 1] == " ", "the quote ends at a word boundary"


@pytest.mark.anyio
async def test_an_empty_answer_says_so() -> None:
    answer, _ = await ask(ScriptedLLM(" "))
    assert answer.error.endswith("it began: (nothing)")

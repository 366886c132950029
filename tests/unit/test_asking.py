"""One question to the LLM: what a failed or unreadable answer records."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from firmsift.adapters.files.classifiers import load_catalog
from firmsift.adapters.memory.providers import ScriptedLLM
from firmsift.domain.model import ResultStatus
from firmsift.services.asking import ask_llm


async def ask(llm: ScriptedLLM):
    return await ask_llm("acme.com", load_catalog()["cpg"], [], llm, slots=asyncio.Semaphore(1), marker="M",
                         now=lambda: datetime(2026, 1, 1, tzinfo=UTC))


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

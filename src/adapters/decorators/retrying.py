"""Retrying decorators for the LLM and search ports: transient failures tried again under a
RetryPolicy (retrier.py), with the tokens of every billed attempt counted in the answer."""

from __future__ import annotations

import asyncio
import dataclasses
import random
import time
from collections.abc import Callable
from typing import Any

from firmsift.adapters.decorators.retrier import Retrier, RetryPolicy, RetryTally
from firmsift.domain.clock import Sleep
from firmsift.domain.errors import ProviderError
from firmsift.domain.model import Evidence
from firmsift.domain.spend import add_tokens
from firmsift.ports.providers import LLM, Completion, Search


class RetryingLLM:
    """An LLM whose transient failures (rate limits, timeouts, 5xx, lost connections) are tried
    again under a RetryPolicy. Each attempt keeps the wrapped adapter's own timeout.

    The tokens of every attempt the provider reports billing (a failed attempt's, carried by
    its ProviderError) are added to what the call returns or finally raises, so the answer's
    cost covers all of them. An attempt that failed without a response reports none.
    """

    def __init__(
        self,
        llm: LLM,
        policy: RetryPolicy,
        *,
        sleep: Sleep = asyncio.sleep,
        random: Callable[[], float] = random.random,
        clock: Callable[[], float] = time.monotonic,
        tally: RetryTally | None = None,
    ) -> None:
        self.inner = llm
        self.model = llm.model
        self.retrier = Retrier(policy, sleep=sleep, random=random, clock=clock, tally=tally)

    async def complete(self, system: str, user: str, *, json_schema: dict[str, Any]) -> Completion:
        billed: list[ProviderError] = []  # failed attempts, with the tokens each was billed

        async def attempt() -> Completion:
            try:
                return await self.inner.complete(system, user, json_schema=json_schema)
            except ProviderError as error:
                billed.append(error)
                raise

        try:
            completion = await self.retrier.run(self.model, attempt)
        except ProviderError as error:
            # The final error is the last attempt's (or says so): it carries every attempt's tokens.
            error.prompt_tokens = _billed(billed, "prompt_tokens", None)
            error.completion_tokens = _billed(billed, "completion_tokens", None)
            raise
        if not billed:
            return completion
        return dataclasses.replace(
            completion,
            prompt_tokens=_billed(billed, "prompt_tokens", completion.prompt_tokens),
            completion_tokens=_billed(billed, "completion_tokens", completion.completion_tokens))


class RetryingSearch:
    """A search provider whose transient failures are tried again under a RetryPolicy."""

    def __init__(
        self,
        search: Search,
        policy: RetryPolicy,
        *,
        sleep: Sleep = asyncio.sleep,
        random: Callable[[], float] = random.random,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.inner = search
        self.name = search.name
        self.retrier = Retrier(policy, sleep=sleep, random=random, clock=clock)

    async def gather(self, domain: str) -> list[Evidence]:
        return await self.retrier.run(self.name, lambda: self.inner.gather(domain))


def _billed(failed: list[ProviderError], field: str, last: int | None) -> int | None:
    """The `field` tokens of the failed attempts added to `last` (the final attempt's)."""
    total = last
    for error in failed:
        total = add_tokens(total, getattr(error, field))
    return total

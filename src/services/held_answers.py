"""Answers the database would not store (read-only, full, away) though their LLM calls were made
and paid: held in the worker's memory, saved again with backoff until the database takes them, and
used instead of asking the LLM again. Those still held when the worker stops are logged as lost,
with their cost: memory is the only place a worker has besides the database, and the database is
what refused them."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from firmsift.domain.model import Answer, DomainResult, ResultStatus
from firmsift.ports.infrastructure_errors import DatabaseFailure

log = logging.getLogger(__name__)
SAVE_DELAYS = (0.5, 1.0, 2.0, 5.0)  # seconds between attempts to save what is held; the last repeats
STILL_HELD_EVERY = 12  # failed attempts between two warnings (once a minute at the last delay)
LAST_TRY_SECONDS = 5.0  # the try at shutdown: a database that hangs must not hold the worker up


def worth_holding(answer: Answer) -> bool:
    """Whether asking again would pay again: an answer (DONE), or a failure whose call was billed
    (tokens or a price reported). A failure that billed nothing (refused, never sent) is asked again."""
    return answer.status is ResultStatus.DONE or answer.tokens_in is not None or answer.cost_usd is not None


@dataclass(frozen=True)
class HeldAnswer:
    """One domain's result for its job, with the answer to cache, as they were to be stored."""

    job_id: str
    result: DomainResult
    answer: Answer
    hold: str | None = None  # its spend hold on the daily limits, dropped once the answer is stored

    @property
    def key(self) -> tuple[str, str]:
        return self.job_id, self.result.domain


class HeldAnswers:
    """The answers one worker holds. `keep_saving` saves them; jobs look here before asking."""

    def __init__(self) -> None:
        self._held: dict[tuple[str, str], HeldAnswer] = {}
        self._arrived = asyncio.Event()

    def __len__(self) -> int:
        return len(self._held)

    def hold(self, held: HeldAnswer) -> None:
        self._held[held.key] = held
        self._arrived.set()

    def find(self, job_id: str, classifier: str, domain: str) -> HeldAnswer | None:
        """The job's own held result for `domain`, else another job's held answer for it, else None."""
        own = self._held.get((job_id, domain))
        if own is not None:
            return own
        return next((held for held in self._held.values()
                     if held.answer.domain == domain and held.answer.classifier == classifier), None)

    def stored(self, held: HeldAnswer) -> None:
        """`held` is in the database now, saved by keep_saving (unless held again since)."""
        if self._held.get(held.key) is held:
            del self._held[held.key]

    def drop(self, job_id: str, domain: str) -> None:
        """The job stored its result for `domain` itself: nothing of it is held any more."""
        self._held.pop((job_id, domain), None)

    async def keep_saving(self, save: Callable[[HeldAnswer], Awaitable[None]], stop: asyncio.Event) -> None:
        """Save each held answer with `save` until the database takes it, backing off while it
        refuses, until `stop` is set; then try once more, and log what is still held as lost."""
        failures = 0
        while not stop.is_set():
            if not self._held:
                self._arrived.clear()
                await _first_of(stop.wait(), self._arrived.wait())
                continue
            error = await self._save_all(save)
            if error is None:
                failures = 0
                continue
            delay = SAVE_DELAYS[min(failures, len(SAVE_DELAYS) - 1)]
            if failures % STILL_HELD_EVERY == 0:
                log.warning("%d answer(s) held, not yet stored: %s; trying again in %.1fs", len(self._held), error,
                            delay, extra={"held": len(self._held)})
            failures += 1
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), delay)
        if self._held:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._save_all(save), LAST_TRY_SECONDS)
        self._log_lost()

    async def _save_all(self, save: Callable[[HeldAnswer], Awaitable[None]]) -> Exception | None:
        """Save what is held, in the order it came; the first failure stops the round and is returned."""
        for held in list(self._held.values()):
            try:
                await save(held)
            except DatabaseFailure as error:
                return error
            except Exception as error:  # noqa: BLE001 - a bug must not end the loop: what is held stays held
                log.exception("saving a held answer failed", extra={"job_id": held.job_id,
                                                                    "domain": held.result.domain})
                return error
            self.stored(held)
            log.info("held answer stored", extra={"job_id": held.job_id, "domain": held.result.domain})
        return None

    def _log_lost(self) -> None:
        for held in self._held.values():
            log.error("answer lost: its call was paid but the database never took it", extra={
                "job_id": held.job_id, "domain": held.result.domain, "classifier": held.answer.classifier,
                "cost_usd": held.answer.cost_usd, "tokens_in": held.answer.tokens_in,
                "tokens_out": held.answer.tokens_out})
        if self._held:
            cost = sum(held.answer.cost_usd or 0.0 for held in self._held.values())
            log.error("%d paid answer(s) lost at shutdown (%.6f USD known); their jobs ask again when redelivered",
                      len(self._held), cost, extra={"lost": len(self._held), "cost_usd": cost})


async def _first_of(*waits: Awaitable[object]) -> None:
    tasks = [asyncio.ensure_future(wait) for wait in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()

"""The spend ledger on every store (in-memory, SQLite, PostgreSQL): a span's spend per owner and
in all, counted by when each domain finished, unknown costs counted apart."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from firmsift.domain.model import DomainResult, Job, JobStatus, ResultStatus
from firmsift.domain.spend import Spend

pytestmark = pytest.mark.anyio


@pytest.fixture
def stores(backend_container) -> tuple[object, object]:  # noqa: ANN001
    """(the store jobs are saved to, the spend ledger read from it), on each backend."""
    return backend_container.store(), backend_container.spend_ledger()


async def finish(store, job_id: str, owner: str, *results: tuple[float | None, int | None]) -> None:
    domains = tuple(f"d{i}.com" for i in range(len(results) + 1))  # one more, left PENDING
    await store.create_job(Job(id=job_id, classifier="cpg", status=JobStatus.RUNNING, owner=owner,
                               created_at=datetime.now(timezone.utc), domains=domains))
    for domain, (cost, tokens) in zip(domains, results, strict=False):
        await store.save_result(job_id, DomainResult(domain, ResultStatus.DONE, cost_usd=cost, tokens_in=tokens,
                                                     tokens_out=tokens), None)


async def test_spend_is_summed_per_owner_and_in_all_over_a_span(stores) -> None:
    store, ledger = stores
    before = datetime.fromtimestamp(time.time() - 1, timezone.utc)
    await finish(store, "j1", "key_a", (0.1, 10), (0.2, 20), (None, None))
    await finish(store, "j2", "key_b", (1.0, 5))
    after = datetime.fromtimestamp(time.time() + 1, timezone.utc)
    assert await ledger.spend_between(before, after, "key_a") == Spend(30, 30, 0.3, 1)
    assert await ledger.spend_between(before, after, "key_b") == Spend(5, 5, 1.0, 0)
    assert await ledger.spend_between(before, after) == Spend(35, 35, 1.3, 1)
    assert await ledger.spend_between(before, after, "key_nobody") == Spend()
    # The span is half-open and by finishing time: nothing finished in the hour after `after`.
    assert await ledger.spend_between(after, after + timedelta(hours=1)) == Spend()
    assert await ledger.spend_between(before - timedelta(hours=1), before) == Spend()

"""Daily spend limits: the UTC window and its reset, reading a limit, and the Budgets service on
the in-memory store (key and global limits, spend counted by the day a result finished)."""

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firmsift.adapters.memory.keys import InMemoryApiKeys
from firmsift.adapters.memory.store import InMemoryStore
from firmsift.domain.budgets import MAX_LIMIT_USD, BudgetExhausted, parse_limit, reached, window_of
from firmsift.domain.keys import ANONYMOUS, ApiKeyNotFound
from firmsift.domain.model import DomainResult, Job, JobStatus, ResultStatus
from firmsift.services.budgets import Budgets, set_daily_limit
from firmsift.services.keys import create_key

pytestmark = pytest.mark.anyio
UTC = timezone.utc


def test_the_window_is_the_utc_day_and_resets_at_the_next_midnight() -> None:
    window = window_of(datetime(2026, 12, 1, 23, 59, 30, tzinfo=UTC))
    assert (window.start, window.resets_at) == (datetime(2026, 12, 1, tzinfo=UTC), datetime(2026, 12, 2, tzinfo=UTC))
    assert window.seconds_left(datetime(2026, 12, 1, 23, 59, 30, tzinfo=UTC)) == 30
    # Another zone's time is placed in its UTC day: 01:00 in UTC+2 is 23:00 UTC the day before.
    plus_two = timezone(timedelta(hours=2))
    assert window_of(datetime(2026, 12, 2, 1, 0, tzinfo=plus_two)).start == datetime(2026, 12, 1, tzinfo=UTC)
    with pytest.raises(ValueError, match="timezone-aware"):
        window_of(datetime(2026, 12, 1))


@given(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)))
def test_every_moment_lies_in_its_window_and_waits_at_least_a_second(now: datetime) -> None:
    window = window_of(now)
    assert window.start <= now < window.end and window.end - window.start == timedelta(days=1)
    assert 1 <= window.seconds_left(now) <= 86400


@pytest.mark.parametrize(("text", "limit"), [("5", 5.0), (" 2.50 ", 2.5), ("0", 0.0), ("none", None), ("", None),
                                             ("NONE", None)])
def test_limits_are_read_as_usd_or_none(text: str, limit: float | None) -> None:
    assert parse_limit(text) == limit


@pytest.mark.parametrize("text", ["-1", "five", "nan", "inf", "1e9", "5$"])
def test_a_bad_limit_is_refused_naming_it(text: str) -> None:
    with pytest.raises(ValueError, match="USD"):
        parse_limit(text)


def test_a_limit_is_reached_at_or_above_it_and_zero_allows_nothing() -> None:
    assert not reached(None, 1e9)
    assert not reached(5.0, 4.99) and reached(5.0, 5.0) and reached(5.0, 5.01)
    assert reached(0.0, 0.0)
    assert MAX_LIMIT_USD == parse_limit(str(MAX_LIMIT_USD))


async def spend(store: InMemoryStore, job_id: str, owner: str, *costs: float | None) -> None:
    """A job of `owner` whose domains finished now, each having cost what is given."""
    domains = tuple(f"d{i}.com" for i in range(len(costs)))
    await store.create_job(Job(id=job_id, classifier="cpg", status=JobStatus.RUNNING, owner=owner,
                               created_at=datetime.now(UTC), domains=domains))
    for domain, cost in zip(domains, costs, strict=True):
        await store.save_result(job_id, DomainResult(domain, ResultStatus.DONE, cost_usd=cost), None)


async def refusal_of(budgets: Budgets, owner: str) -> BudgetExhausted | None:
    """Why `owner` may not spend now, or None (a hold of nothing taken and dropped)."""
    held = await budgets.reserve(owner, 0.0)
    if isinstance(held, str):
        await budgets.release(held)
    return held if isinstance(held, BudgetExhausted) else None


def now_plus(days: float):
    return lambda: datetime.now(UTC) + timedelta(days=days)


async def test_a_key_over_its_limit_is_refused_until_the_next_utc_midnight() -> None:
    store, keys = InMemoryStore(), InMemoryApiKeys()
    tight = (await create_key("tight", [], keys, daily_limit_usd=0.05)).record
    loose = (await create_key("loose", [], keys)).record
    await spend(store, "j1", tight.id, 0.03, 0.02, None)  # the unknown cost counts 0 USD
    await spend(store, "j2", loose.id, 7.0)
    budgets = Budgets(store, keys, None)
    with pytest.raises(BudgetExhausted) as refused:
        await budgets.check(tight.caller())
    assert (refused.value.scope, refused.value.limit, refused.value.spent) == ("key", 0.05, 0.05)
    assert refused.value.resets_at == window_of(datetime.now(UTC)).resets_at
    assert "this API key's daily spend limit of 0.05 USD is reached" in str(refused.value)
    await budgets.check(loose.caller())  # no limit of its own, no global one
    await budgets.check(ANONYMOUS)
    assert await refusal_of(Budgets(store, keys, None, now=now_plus(1)), tight.id) is None  # a new day
    # What finished yesterday is not today's spend.
    assert await refusal_of(Budgets(store, keys, None, now=now_plus(-1)), tight.id) is None


async def test_the_global_limit_counts_every_owner_and_applies_to_anyone() -> None:
    store, keys = InMemoryStore(), InMemoryApiKeys()
    first = (await create_key("first", [], keys)).record
    await spend(store, "j1", first.id, 1.0)
    await spend(store, "j2", "", 1.5)
    with pytest.raises(BudgetExhausted) as refused:
        await Budgets(store, keys, 2.5).check(ANONYMOUS)
    assert (refused.value.scope, refused.value.spent) == ("global", 2.5)
    assert "global daily spend limit of 2.5 USD" in str(refused.value)
    assert await refusal_of(Budgets(store, keys, 2.6), first.id) is None


async def test_a_raised_or_removed_limit_takes_effect_at_once() -> None:
    store, keys = InMemoryStore(), InMemoryApiKeys()
    key = (await create_key("team", [], keys, daily_limit_usd=1)).record
    await spend(store, "j1", key.id, 1.0)
    budgets = Budgets(store, keys, None)
    assert await refusal_of(budgets, key.id) is not None
    assert (await set_daily_limit(key.id, 2, keys)).daily_limit_usd == 2
    assert await refusal_of(budgets, key.id) is None
    await set_daily_limit(key.id, 0, keys)
    assert await refusal_of(budgets, key.id) is not None
    await set_daily_limit(key.id, None, keys)
    assert await refusal_of(budgets, key.id) is None
    with pytest.raises(ApiKeyNotFound):
        await set_daily_limit("key_missing", 1, keys)
    with pytest.raises(ValueError):
        await set_daily_limit(key.id, -1, keys)


async def test_key_spends_show_each_keys_limit_and_spend_today() -> None:
    store, keys = InMemoryStore(), InMemoryApiKeys()
    key = (await create_key("team", [], keys, daily_limit_usd=3)).record
    await spend(store, "j1", key.id, 0.5, None)
    [listed] = await Budgets(store, keys, None).key_spends()
    assert (listed.key.id, listed.key.daily_limit_usd) == (key.id, 3)
    assert (listed.spend.cost_usd, listed.spend.cost_unknown_domains) == (0.5, 1)
    window, total = await Budgets(store, keys, None).total_today()
    assert total.cost_usd == 0.5 and window.start <= datetime.now(UTC) < window.end

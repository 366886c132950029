"""`classify --estimate` of a list the API takes in several batches: the parts' dry runs, added up."""

from __future__ import annotations

from firmsift.entrypoints.cli.classify_estimate import added_up, estimate_in_parts
from firmsift.ports.jobs_api import BatchRefused


def part(to_ask: int, seconds: float | None, cost: float | None) -> dict:
    return {"total": to_ask, "accepted": to_ask, "duplicates": 0, "rejected": [], "human_answers": 0,
            "known_companies": 0, "cached": 0, "cached_precheck": 0, "to_precheck": 0, "to_ask": to_ask,
            "llm": {"model": "m", "tokens_in": 100 * to_ask, "tokens_out": 10 * to_ask, "cost_usd": cost,
                    "cost": "known" if cost is not None else "unknown: no price", "wall_time_seconds": seconds,
                    "wall_time": "unknown: no latency" if seconds is None else f"about {seconds} s"}}


def test_the_parts_counts_tokens_cost_and_time_are_added_up() -> None:
    whole = added_up([part(3, 30.0, 0.25), part(2, 100.0, 0.5)])
    assert (whole["total"], whole["to_ask"], whole["llm"]["tokens_in"], whole["llm"]["cost_usd"]) == (5, 5, 500, 0.75)
    assert whole["llm"]["wall_time"] == "about 2 min 10 s for one worker (the 2 parts the API took this list in, added up)"


def test_one_unknown_part_makes_the_sum_unknown_and_says_why() -> None:
    whole = added_up([part(3, 30.0, 0.25), part(2, None, None)])
    assert whole["llm"]["cost_usd"] is None and whole["llm"]["cost"] == "unknown: no price"
    assert whole["llm"]["wall_time"] == "unknown: no latency"


def test_a_list_too_large_is_halved_until_the_api_takes_each_part() -> None:
    seen: list[int] = []

    def estimate(body: bytes) -> dict:
        rows = body.decode().count("\r\n") - 1
        seen.append(rows)
        if rows > 3:
            raise BatchRefused("too large")
        return part(rows, 1.0, 0.0)

    parts = estimate_in_parts(estimate, ["domain"], [[f"d{n}.com"] for n in range(10)])
    assert [p["total"] for p in parts] == [2, 3, 2, 3] and sum(p["total"] for p in parts) == 10
    assert seen[0] == 10

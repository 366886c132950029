"""Job ids: canonical UUID version 7 text, in the order they were made, unique within a millisecond."""

from __future__ import annotations

import uuid

from firmsift.machinery.job_ids import TimeOrderedIds
from firmsift.services.submit import new_job_id, parse_job_id


def test_ids_are_canonical_version_7_uuids_that_parse_as_job_ids() -> None:
    made = new_job_id()
    assert uuid.UUID(made).version == 7 and parse_job_id(made) == made


def test_ids_sort_in_the_order_they_were_made_within_and_across_milliseconds() -> None:
    ticks = iter([5_000_000] * 5000 + [4_000_000] * 3 + [9_000_000] * 2)  # 5,000 in one ms, then the clock goes back
    ids = TimeOrderedIds(lambda: next(ticks))
    made = [ids() for _ in range(5005)]
    assert made == sorted(made) and len(set(made)) == len(made)
    assert uuid.UUID(made[0]).int >> 80 == 5 and uuid.UUID(made[-1]).int >> 80 == 9

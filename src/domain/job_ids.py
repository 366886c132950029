"""Job ids: UUIDs of version 7 (RFC 9562), which sort in the order they were made. Here is their
layout and how one follows another; the clock, the lock and the randomness that make them are
machinery (machinery/job_ids.py)."""

from __future__ import annotations

Stamp = tuple[int, int]  # an id's (Unix time in milliseconds, counter within the millisecond)

MAX_COUNTER = 0xFFF  # the counter's 12 bits: 4,096 ids a millisecond


def next_stamp(last: Stamp, millis: int) -> Stamp:
    """The stamp of the id made after one stamped `last`, the clock now reading `millis`: a later
    millisecond starts its counter at 0; otherwise the counter goes on, and past MAX_COUNTER the
    next millisecond is borrowed. Ids thus never sort before one made earlier."""
    last_millis, counter = last
    if millis > last_millis:
        return millis, 0
    if counter < MAX_COUNTER:
        return last_millis, counter + 1
    return last_millis + 1, 0  # 4,096 ids in one millisecond, or the clock went back: borrow the next millisecond


def uuid7(millis: int, counter: int, random_bits: int) -> str:
    """The canonical text of the UUID version 7 with these 48 bits of milliseconds, 12 bits of
    counter and the low 62 of `random_bits`."""
    value = (millis << 80 | 0x7 << 76 | counter << 64 | 0b10 << 62
             | random_bits & (1 << 62) - 1)
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"

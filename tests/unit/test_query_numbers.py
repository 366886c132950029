"""Reading a whole number from a query or a form: the range holds at both ends, anything but
ASCII digits is refused with 400 bad_<name>, and a value of thousands of digits is refused (or
read) without int() failing on it."""

from __future__ import annotations

import pytest

from firmsift.entrypoints.http.errors import BodyRejected
from firmsift.entrypoints.http.query_numbers import LARGEST_ROW_INDEX, whole_number


def read(text: str | None, *, low: int = 1, high: int = 1000, default: int = 100) -> int:
    return whole_number({} if text is None else {"limit": text}, "limit", low=low, high=high, default=default)


@pytest.mark.parametrize(("text", "number"), [(None, 100), ("1", 1), ("1000", 1000), ("0042", 42),
                                              ("0" * 5000 + "7", 7)])
def test_a_whole_number_in_range_is_read(text: str | None, number: int) -> None:
    assert read(text) == number


@pytest.mark.parametrize("text", ["0", "1001", "9" * 5000, "9" * 4301, "", " 5", "5 ", "+5", "-5", "5.0", "1e3",
                                  "0x10", "\u0665", "\uff15", "5\x00", "²"])
def test_anything_else_is_a_400_naming_the_parameter(text: str) -> None:
    with pytest.raises(BodyRejected) as refused:
        read(text)
    assert (refused.value.status, refused.value.code) == (400, "bad_limit")
    assert refused.value.message.startswith("limit must be a whole number from 1 to 1000, not ")
    assert len(refused.value.message) < 120  # a megabyte of nines is not echoed back


def test_a_row_index_is_anything_a_database_can_store() -> None:
    def start(text: str) -> int:
        return whole_number({"start": text}, "start", low=0, high=LARGEST_ROW_INDEX, default=0)

    assert start("0") == 0
    assert start(str(2**63 - 1)) == 2**63 - 1
    for past in (str(2**63), "9999999999999999999", "1" + "0" * 19):
        with pytest.raises(BodyRejected) as refused:
            start(past)
        assert refused.value.code == "bad_start"

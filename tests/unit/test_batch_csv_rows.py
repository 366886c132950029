"""A CSV upload's rows come back as sent: whatever the cells hold (quotes, delimiters, newlines,
formulas, non-ASCII), each row's original values are kept in order, and its CSV result line
starts with exactly those cells."""

from __future__ import annotations

import csv
import io
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from firmsift.domain.batch_results import RowResult, csv_line
from firmsift.domain.batches import Batch, BatchRow
from firmsift.entrypoints.http.batch_body import CsvUpload, SpooledBody

CELLS = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\r"), max_size=12)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(CELLS, CELLS), min_size=1, max_size=8))
def test_every_rows_cells_are_kept_and_written_back_in_order(records: list[tuple[str, str]]) -> None:
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL)  # quoted: the sniffer then finds the comma
    writer.writerow(["Name", "Website"])
    writer.writerows(records)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "body"
        path.write_text(out.getvalue(), encoding="utf-8", newline="")
        upload = CsvUpload(SpooledBody(path, ""), "Website", max_columns=1000, max_row_chars=65536)
        rows = list(upload.rows())
    assert upload.header == ("Name", "Website")
    assert [row.position for row in rows] == list(range(len(records)))
    batch = Batch(id="b", classifier="cpg", created_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
                  columns=upload.header)
    for row, record in zip(rows, records):
        assert row.value == record[1]
        written = next(csv.reader(io.StringIO(csv_line(batch, RowResult(BatchRow(row.position, row.line,
                                                                                   row.original))))))
        assert written[:2] == list(record)

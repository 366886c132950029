"""The evaluation report's files (report.json, report.md, report.html) and the terminal's summary table."""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from firmsift.entrypoints.eval import figures as fig
from firmsift.entrypoints.eval.report_html import render_html
from firmsift.entrypoints.eval.report_markdown import render_markdown

__all__ = ["render_html", "render_markdown", "summary_table", "write_reports"]

# Domains and names reach a terminal: a control character there (an ANSI escape) could rewrite the screen.
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def write_reports(document: Mapping[str, Any], folder: Path) -> list[Path]:
    """Write report.json, report.md and report.html into `folder` (created if need be); each file is
    replaced whole, so a reader never sees half a report. Returns the three paths."""
    folder.mkdir(parents=True, exist_ok=True)
    contents = {
        "report.json": json.dumps(document, indent=2, ensure_ascii=False, sort_keys=False, allow_nan=False) + "\n",
        "report.md": render_markdown(document),
        "report.html": render_html(document),
    }
    return [_write_atomically(folder / name, text) for name, text in contents.items()]


def _write_atomically(path: Path, text: str) -> Path:
    # The temporary file sits in the same folder: os.replace is atomic only within one file system.
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(text.encode("utf-8"))
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return path


def summary_table(document: Mapping[str, Any]) -> str:
    """What the terminal prints after a run: the metrics table, then each candidate's false negatives
    (first: a missed CPG company is the costly mistake) and false positives, then the disagreements."""
    candidates = document["candidates"]
    lines = _aligned([list(fig.METRIC_HEADERS)] + [[_plain(c) for c in fig.metric_row(c)] for c in candidates])
    lines += ["", *(_plain(line) for line in fig.precheck_lines(document))]
    for candidate in candidates:
        m = candidate["metrics"]
        lines.append("")
        lines.append(f"{_plain(candidate['name'])}:")
        lines.append(_domain_line("false negatives", m["false_negatives"]))
        lines.append(_domain_line("false positives", m["false_positives"]))
        for kind in ("unparseable", "failed"):
            if m[kind]:
                lines.append(_domain_line(kind, m[kind]))
        if m.get("search_failed"):
            lines.append(_domain_line("asked without evidence (search failed)", m["search_failed"]))
        if m.get("precheck_ended"):
            lines.append(_domain_line("ended by the pre-check (not scored)", m["precheck_ended"]))
    count = len(document["disagreements"])
    lines.append("")
    lines.append(f"disagreements: {count} domain(s) on which the candidates differ"
                 + (" (see the report's disagreement table)" if count else ""))
    return "\n".join(lines)


def _domain_line(title: str, domains: Sequence[str]) -> str:
    return f"  {title} ({len(domains)}): " + (", ".join(_plain(d) for d in domains) or "none")


def _aligned(rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    # Text columns (the name) align left, figures right, as a reader scans them.
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths)))
             for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return [line.rstrip() for line in lines]


def _plain(text: str) -> str:
    return _UNPRINTABLE.sub("?", str(text))

"""Benchmark figures, each set against its limit or a baseline of the same run, and how they are shown."""

from __future__ import annotations

import json
import os
import platform
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

Direction = Literal["at_most", "at_least"]


@dataclass(frozen=True)
class Figure:
    """One measured value. `ratio` is value / reference; the goal, when there is one, bounds
    the ratio from above (at_most) or below (at_least)."""

    benchmark: str
    shape: str  # "embedded", "production" or "bare"
    name: str
    value: float
    unit: str
    reference: float | None = None  # the limit or the baseline measured in the same run
    reference_name: str = ""
    goal: float | None = None
    direction: Direction = "at_most"
    note: str = ""

    @property
    def ratio(self) -> float | None:
        return None if not self.reference else self.value / self.reference

    @property
    def met(self) -> bool | None:
        if self.goal is None or self.ratio is None:
            return None
        return self.ratio <= self.goal if self.direction == "at_most" else self.ratio >= self.goal

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ratio": self.ratio, "met": self.met}


def markdown_table(figures: list[Figure]) -> str:
    lines = [
        "| benchmark | shape | figure | value | limit / baseline | ratio | goal | met? |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for f in figures:
        reference = f"{_number(f.reference)} {f.unit} ({f.reference_name})" if f.reference else ""
        ratio = f"{f.ratio:.2f}x" if f.ratio is not None else ""
        goal = f"{'≤' if f.direction == 'at_most' else '≥'} {f.goal:g}x" if f.goal is not None else ""
        met = {True: "yes", False: "**no**", None: ""}[f.met]
        value = f"{_number(f.value)} {f.unit}" + (f" ({f.note})" if f.note else "")
        lines.append(f"| {f.benchmark} | {f.shape} | {f.name} | {value} | {reference} | {ratio} | {goal} | {met} |")
    return "\n".join(lines)


def report(figures: list[Figure], out: Path | None, *, small: bool, **extra: Any) -> None:
    """Print the figures as a Markdown table and, with `out`, write them as JSON with the machine
    they were measured on and `extra` (a benchmark's own settings)."""
    print(markdown_table(figures))
    if out:
        out.write_text(json.dumps({"small": small, "machine": machine(), **extra,
                                   "figures": [f.as_dict() for f in figures]}, indent=2) + "\n")


def _number(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    cpuinfo = Path("/proc/cpuinfo").read_text()
    model = next((line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")), "")
    meminfo = Path("/proc/meminfo").read_text().splitlines()
    total_kib = next(int(line.split()[1]) for line in meminfo if line.startswith("MemTotal"))
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "memory_gib": round(total_kib / 1024 / 1024, 1),
        "python": platform.python_version(),
        "kernel": platform.release(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }

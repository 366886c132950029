"""CPU time and memory of a running process, read from /proc (Linux)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_MEBIBYTE_IN_KIB = 1024


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time the process has used so far."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    # The command name (field 2) is in parentheses and may hold spaces: split after its end.
    fields = stat[stat.rindex(")") + 2:].split()
    user, system = int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5)
    return (user + system) / _CLOCK_TICKS


def children(pid: int) -> list[int]:
    """The process ids of a process's children (the copies of `--processes N`, `--workers N`)."""
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def tree_cpu_seconds(pid: int) -> float:
    """CPU time of a process and its children, while they run."""
    return cpu_seconds(pid) + sum(cpu_seconds(child) for child in children(pid))


@dataclass(frozen=True)
class Memory:
    resident_mib: float  # VmRSS: resident now
    peak_resident_mib: float  # VmHWM: the most it was ever resident


def memory(pid: int) -> Memory:
    values: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            values[name] = int(rest.split()[0]) / _MEBIBYTE_IN_KIB  # reported in kB
    return Memory(values["VmRSS"], values["VmHWM"])

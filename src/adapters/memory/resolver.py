"""An in-memory resolver: DNS facts looked up in a table, every look-up recorded."""

from __future__ import annotations

from collections.abc import Mapping

from firmsift.domain.site_facts import DnsFacts, DnsOutcome

NXDOMAIN = DnsFacts(DnsOutcome.NXDOMAIN)


class InMemoryResolver:
    """Answers from `records` (name -> facts, names compared without case or trailing dot);
    any other name is `default` (NXDOMAIN unless told). `history` lists the names asked, in order,
    so a test can assert how often the DNS was asked and about what."""

    def __init__(self, records: Mapping[str, DnsFacts] | None = None, *, default: DnsFacts = NXDOMAIN) -> None:
        self.records = {_key(name): facts for name, facts in (records or {}).items()}
        self.default = default
        self.history: list[str] = []

    def add(self, name: str, facts: DnsFacts) -> None:
        self.records[_key(name)] = facts

    async def look_up(self, name: str) -> DnsFacts:
        self.history.append(name)
        return self.records.get(_key(name), self.default)


def _key(name: str) -> str:
    return name.strip().lower().rstrip(".")

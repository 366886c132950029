"""When a negative DNS answer (NXDOMAIN, no address) may end a domain as `no_dns`.

Some resolvers deny every name: offline sandboxes, proxied corporate networks and captive portals
answer NXDOMAIN for everything. Trusting them ends a whole list as `no_dns` and caches that for a
week. So a negative answer ends a domain only while none of these holds:

- the resolver has not shown that it answers: most of the canary names (names that must exist)
  were denied or not answered when last looked up;
- an outbound proxy carries the traffic: local DNS says nothing about what the proxy reaches;
- negative answers are most of the recent look-ups (an implausible run: real lists hold some dead
  domains, not mostly dead ones).

Otherwise the domain's status is `unknown` and it goes on as if unchecked: nothing is lost, at
worst an LLM call is paid for a dead domain.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from firmsift.domain.site_facts import DnsFacts, DnsOutcome

DEFAULT_CANARIES = ("example.com", "iana.org", "wikipedia.org")
RUN_WINDOW = 50  # the recent look-ups judged
RUN_LEAST = 20  # fewer look-ups than this prove nothing either way
RUN_SHARE = 0.8  # negative answers at least this share of the window: implausible


@dataclass(frozen=True)
class CanaryCheck:
    """What the resolver said of each canary name: those that resolved, and the others with what
    was said instead (nxdomain, no_address, failed, timeout)."""

    answered: tuple[str, ...]
    denied: tuple[tuple[str, DnsOutcome], ...]

    @classmethod
    def of(cls, canaries: Sequence[str], facts: Sequence[DnsFacts]) -> CanaryCheck:
        answered = tuple(name for name, fact in zip(canaries, facts, strict=True) if fact.addresses)
        denied = tuple((name, fact.outcome) for name, fact in zip(canaries, facts, strict=True) if not fact.addresses)
        return cls(answered, denied)

    @property
    def trusted(self) -> bool:
        """Most canaries resolved (one canary gone some day does not silence every other)."""
        return len(self.answered) > len(self.denied)

    def doubt(self) -> str | None:
        """Why negative answers are not trusted, or None."""
        if self.trusted:
            return None
        said = ", ".join(f"{name} ({outcome.value})" for name, outcome in self.denied)
        return f"the resolver denies names that must exist: {said}"


class NegativeRun:
    """The last `window` look-ups, negative or not; implausible when at least `least` were seen
    and `share` of them or more were negative."""

    def __init__(self, window: int = RUN_WINDOW, least: int = RUN_LEAST, share: float = RUN_SHARE) -> None:
        if not 0 < least <= window or not 0 < share <= 1:
            raise ValueError("need 0 < least <= window and 0 < share <= 1")
        self._seen: deque[bool] = deque(maxlen=window)
        self._least = least
        self._share = share

    def record(self, facts: DnsFacts) -> None:
        """One look-up's outcome; a failure or timeout says nothing either way and is not counted."""
        if facts.outcome in (DnsOutcome.FAILED, DnsOutcome.TIMEOUT):
            return
        self._seen.append(facts.outcome.has_no_address)

    def doubt(self) -> str | None:
        """Why negative answers are not trusted now, or None."""
        negative = sum(self._seen)
        if len(self._seen) < self._least or negative < self._share * len(self._seen):
            return None
        return f"{negative} of the last {len(self._seen)} domains looked up had no DNS, too many to be true"

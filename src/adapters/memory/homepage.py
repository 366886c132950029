"""An in-memory homepage look: HTTP facts per domain from a table, every look recorded."""

from __future__ import annotations

from collections.abc import Mapping

from firmsift.domain.site_facts import HomepageLook, HttpFacts

LIVE_PAGE = "<html><head><title>Welcome</title></head><body>We make things.</body></html>"


class InMemoryHomepage:
    """Answers from `pages` (domain -> HttpFacts; a domain's registrable domain is itself); any
    other domain gets a plain live page (HTTP 200) on its own URL. `looks` lists the domains
    looked at, in order."""

    def __init__(self, pages: Mapping[str, HttpFacts] | None = None) -> None:
        self.pages = dict(pages or {})
        self.looks: list[str] = []

    def add(self, domain: str, facts: HttpFacts) -> None:
        self.pages[domain] = facts

    async def look(self, domain: str) -> HomepageLook:
        self.looks.append(domain)
        facts = self.pages.get(domain) or HttpFacts(status=200, final_url=f"https://{domain}/",
                                                    final_registrable_domain=domain, body=LIVE_PAGE)
        return HomepageLook(facts, domain)

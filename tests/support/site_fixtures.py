"""The pre-check fixtures of tests/fixtures/sites/ (see its README) read into the pre-check's facts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from firmsift.domain.site_facts import DnsFacts, DnsOutcome, HttpFacts, HttpFailure, SiteFacts

SITES = Path(__file__).resolve().parents[1] / "fixtures" / "sites"
DEFAULT_DNS = {"outcome": "answered", "addresses": ["198.51.100.7"]}


def load(path: Path | str) -> dict[str, Any]:
    path = SITES / f"{path}.json" if isinstance(path, str) else path
    return json.loads(path.read_text(encoding="utf-8"))


def dns_facts(data: dict[str, Any]) -> DnsFacts:
    return DnsFacts(
        outcome=DnsOutcome(data["outcome"]),
        addresses=tuple(data.get("addresses", ())),
        cname_chain=tuple(data.get("cname_chain", ())),
        name_servers=tuple(data.get("name_servers", ())),
        detail=data.get("detail", ""),
    )


def http_facts(case: dict[str, Any]) -> HttpFacts | None:
    if "http" not in case:
        return None
    raw = case["http"]
    body = (SITES / raw["body_file"]).read_text(encoding="utf-8") if "body_file" in raw else ""
    return HttpFacts(
        status=raw.get("status"),
        failure=HttpFailure(raw["failure"]) if "failure" in raw else None,
        failure_detail=raw.get("failure_detail", ""),
        headers=tuple((name, value) for name, value in raw.get("headers", [])),
        final_url=raw.get("final_url", ""),
        final_registrable_domain=raw.get("final_registrable_domain"),
        body=body,
    )


def site_facts(case: dict[str, Any]) -> SiteFacts:
    return SiteFacts(
        domain=case["domain"],
        dns=dns_facts(case.get("dns", DEFAULT_DNS)),
        www_dns=dns_facts(case["www_dns"]) if "www_dns" in case else None,
        http=http_facts(case),
    )

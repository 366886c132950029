"""The pre-check rule over every fixture in tests/fixtures/sites/, with the packaged signatures:
each wall and parking page of a real service is recognised, and ordinary homepages that mention
the same words stay live."""

from __future__ import annotations

from pathlib import Path

import pytest

from firmsift.adapters.files.site_signatures import load_signatures
from firmsift.domain.site_status import SiteStatus, site_status
from tests.support.site_fixtures import SITES, load, site_facts

CASES = sorted(SITES.glob("*.json"))
SIGNATURES = load_signatures()


def test_there_is_a_case_for_every_status() -> None:
    expected = {load(path)["expect"]["status"] for path in CASES}
    assert expected == {status.value for status in SiteStatus}


@pytest.mark.parametrize("path", CASES, ids=[path.stem for path in CASES])
def test_the_rule_reads_each_case_as_expected(path: Path) -> None:
    case = load(path)
    verdict = site_status(site_facts(case), SIGNATURES)

    expect = case["expect"]
    assert verdict.status.value == expect["status"], verdict.reason
    assert expect["reason_contains"] in verdict.reason
    assert verdict.redirected_to == expect.get("redirected_to")


@pytest.mark.parametrize("path", CASES, ids=[path.stem for path in CASES])
def test_each_case_names_its_source_and_body(path: Path) -> None:
    case = load(path)
    assert case["source"].strip() and case["about"].strip()
    if "body_file" in case.get("http", {}):
        assert (SITES / case["http"]["body_file"]).is_file()


def test_every_wall_and_named_parking_page_service_has_a_case() -> None:
    reasons = [site_status(site_facts(load(path)), SIGNATURES).reason for path in CASES]
    services = {wall.service for wall in SIGNATURES.walls}
    services |= {page.service for page in SIGNATURES.parking_pages if page.service}
    missing = sorted(service for service in services if not any(f"{service} " in r or f"({service}" in r
                                                                 for r in reasons))
    assert missing == []


def test_live_cases_stay_live_when_their_signature_words_are_everywhere() -> None:
    live = [load(path) for path in CASES if path.stem.startswith("live_")]
    assert len(live) >= 6
    for case in live:
        assert site_status(site_facts(case), SIGNATURES).status is SiteStatus.LIVE, case["about"]

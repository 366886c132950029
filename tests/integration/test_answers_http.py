"""The human-answer routes on SQLite and PostgreSQL, with API keys required: correct, list,
export, undo; a job then answers the domain from the correction; every bad input is refused
with the error shape of the contract."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable

import anyio
import pytest
from dependency_injector import providers
from starlette.testclient import TestClient

from firmsift.adapters.memory.providers import FixedPricing, ScriptedLLM, StaticSearch
from firmsift.entrypoints.wiring.container import Container
from firmsift.services.keys import create_key
from firmsift.services.process import process_job
from tests.support.databases import SQL_BACKENDS

YES = '{"is_cpg": true, "confidence": 5, "reasoning": "Makes snacks.", "quote": "Makes and sells packaged snacks"}'


@pytest.fixture(params=SQL_BACKENDS)
def served(request: pytest.FixtureRequest, make_container: Callable[..., Container],
           api_client: Callable[..., TestClient]) -> tuple[Container, TestClient, str, str]:
    """A container on a fresh database of the backend, its API as a client, and a key's secret and id."""
    container = make_container(backend=request.param, auth="required", rate_limit_per_minute=0, precheck=False)
    container.llm.override(ScriptedLLM(YES))
    container.searches.override(providers.Object((StaticSearch(),)))
    container.pricing.override(FixedPricing(1.0, 2.0))
    key = anyio.run(lambda: create_key("analyst", [], container.api_keys()))
    client = api_client(container.api(), raise_server_exceptions=True)
    return container, client, f"Bearer {key.secret}", key.record.id


def test_a_correction_is_stored_listed_exported_used_by_a_job_and_undone(served) -> None:  # noqa: ANN001
    container, client, auth, key_id = served
    headers = {"Authorization": auth}
    first = client.put("/answers/cpg/WWW.Acme.com", json={"answer": True, "note": "sells soap"}, headers=headers)
    assert first.status_code == 200, first.text
    assert {k: first.json()[k] for k in ("domain", "answer", "source", "note", "corrected_by", "replaced", "changed")} \
        == {"domain": "acme.com", "answer": True, "source": "human", "note": "sells soap", "corrected_by": key_id,
            "replaced": None, "changed": True}
    second = client.put("/answers/cpg/acme.com", json={"answer": False, "note": " a bank "}, headers=headers).json()
    assert (second["note"], second["replaced"]["note"]) == ("a bank", "sells soap")

    listed = client.get("/answers?classifier=cpg&source=human", headers=headers).json()
    assert [(a["domain"], a["answer"], a["note"]) for a in listed["answers"]] == [("acme.com", False, "a bank")]
    assert listed["next"] is None
    exported = list(csv.DictReader(io.StringIO(client.get("/answers?format=csv", headers=headers).text)))
    assert [(r["domain"], r["classifier"], r["answer"], r["note"], r["corrected_by"]) for r in exported] == [
        ("acme.com", "cpg", "false", "a bank", key_id)]

    accepted = client.post("/domains/classify", json={"domains": ["acme.com", "other.com"]}, headers=headers).json()
    anyio.run(lambda: process_job(accepted["job_id"], container.job_dependencies()))
    results = client.get(f"/domains/classify/{accepted['job_id']}", headers=headers).json()["results"]
    assert [(r["domain"], r["answer"], r["confidence"], r["source"], r["reason"]) for r in results] == [
        ("acme.com", False, 5, "human", "a bank"), ("other.com", True, 5, "llm", "Makes snacks.")]
    assert len(container.llm().history) == 1  # only other.com was asked

    undone = client.delete("/answers/cpg/acme.com", headers=headers)
    assert undone.status_code == 200
    assert (undone.json()["removed"]["note"], undone.json()["restored"]["note"]) == ("a bank", "sells soap")
    assert client.delete("/answers/cpg/acme.com", headers=headers).json()["restored"] is None
    gone = client.delete("/answers/cpg/acme.com", headers=headers)
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "human_answer_not_found"
    assert client.get("/answers", headers=headers).json() == {"answers": [], "next": None}


def test_the_listing_pages_with_its_next_cursor(served) -> None:  # noqa: ANN001
    _container, client, auth, _key_id = served
    headers = {"Authorization": auth}
    for n in range(5):
        assert client.put(f"/answers/cpg/d{n}.com", json={"answer": True, "note": "soap"}, headers=headers).is_success
    seen, query = [], "/answers?limit=2"
    while True:
        page = client.get(query, headers=headers).json()
        seen += [a["domain"] for a in page["answers"]]
        if page["next"] is None:
            break
        query = f"/answers?limit=2&after={page['next']}"
    assert seen == [f"d{n}.com" for n in range(5)]


@pytest.mark.parametrize(("path", "body", "status", "code", "reason"), [
    ("/answers/cpg/localhost", {"answer": True, "note": "x"}, 422, "invalid_request", "domain 'localhost'"),
    ("/answers/nope/acme.com", {"answer": True, "note": "x"}, 422, "unknown_classifier", "known classifiers: cpg"),
    ("/answers/cpg/acme.com", {"answer": True}, 422, "invalid_request", "note is required"),
    ("/answers/cpg/acme.com", {"answer": "yes", "note": "x"}, 422, "invalid_request", "answer must be true or false"),
    ("/answers/cpg/acme.com", {"answer": True, "note": "x", "by": "me"}, 422, "invalid_request", "not a field"),
    ("/answers/cpg/acme.com", [True], 422, "invalid_request", "expected an object"),
])
def test_bad_corrections_are_refused_with_the_error_shape(served, path: str, body: object, status: int, code: str,  # noqa: ANN001
                                                          reason: str) -> None:
    _container, client, auth, _key_id = served
    refused = client.put(path, json=body, headers={"Authorization": auth})
    assert refused.status_code == status
    error = refused.json()["error"]
    assert error["code"] == code and reason in error["details"][0]["reason"]
    assert client.get("/answers", headers={"Authorization": auth}).json()["answers"] == []


@pytest.mark.parametrize(("query", "code"), [("source=llm", "bad_source"), ("format=xml", "bad_format"),
                                             ("limit=0", "bad_limit"), ("after=nothing", "bad_cursor")])
def test_bad_listing_queries_are_refused(served, query: str, code: str) -> None:  # noqa: ANN001
    _container, client, auth, _key_id = served
    refused = client.get(f"/answers?{query}", headers={"Authorization": auth})
    assert (refused.status_code, refused.json()["error"]["code"]) == (400, code)


def test_every_answer_route_needs_a_key(served) -> None:  # noqa: ANN001
    _container, client, _auth, _key_id = served
    assert client.put("/answers/cpg/acme.com", json={"answer": True, "note": "x"}).status_code == 401
    assert client.delete("/answers/cpg/acme.com").status_code == 401
    assert client.get("/answers").status_code == 401


def test_a_csv_export_checks_its_query_too_and_starts_after_the_cursor(served) -> None:  # noqa: ANN001
    _container, client, auth, _key_id = served
    headers = {"Authorization": auth}
    for n in range(3):
        assert client.put(f"/answers/cpg/d{n}.com", json={"answer": True, "note": "soap"}, headers=headers).is_success
    assert client.get("/answers?format=csv&limit=1.5", headers=headers).json()["error"]["code"] == "bad_limit"
    exported = client.get("/answers?format=csv&after=cpg/d0.com", headers=headers).text
    assert [row["domain"] for row in csv.DictReader(io.StringIO(exported))] == ["d1.com", "d2.com"]


def _answered(container: Container, client: TestClient, headers: dict[str, str], domains: list[str]) -> None:
    accepted = client.post("/domains/classify", json={"domains": domains}, headers=headers).json()
    anyio.run(lambda: process_job(accepted["job_id"], container.job_dependencies()))


def _cached(container: Container, *domains: str) -> set[str]:
    return set(anyio.run(lambda: container.store().get_answers(list(domains), "cpg")))


def test_forgotten_answers_are_asked_again_by_domain_batch_or_classifier(served) -> None:  # noqa: ANN001
    container, client, auth, _key_id = served
    headers = {"Authorization": auth}
    _answered(container, client, headers, ["a.com", "b.com", "c.com"])
    assert _cached(container, "a.com", "b.com", "c.com") == {"a.com", "b.com", "c.com"}

    one = client.post("/answers/forget", json={"domains": ["https://WWW.A.com/"]}, headers=headers)
    assert (one.status_code, one.json()) == (200, {"forgotten": 1})
    assert _cached(container, "a.com", "b.com") == {"b.com"}
    only_precheck = client.post("/answers/forget", json={"domains": ["b.com"], "only": "precheck"}, headers=headers)
    assert only_precheck.json() == {"forgotten": 0}  # b.com's answer is the LLM's

    batch = client.post("/batches", json={"classifier": "cpg", "domains": ["b.com", "x.com"]}, headers=headers).json()
    by_batch = client.post("/answers/forget", json={"batch_id": batch["batch_id"]}, headers=headers)
    assert by_batch.json() == {"forgotten": 1} and _cached(container, "b.com", "c.com") == {"c.com"}
    everything = client.post("/answers/forget", json={"classifier": "cpg", "all": True}, headers=headers)
    assert everything.json() == {"forgotten": 1} and _cached(container, "c.com") == set()

    _answered(container, client, headers, ["a.com"])
    assert len(container.llm().history) == 4  # a.com asked again: three answers, then this one


@pytest.mark.parametrize(("body", "status", "code"), [
    ({}, 422, "invalid_request"),
    ({"domains": ["a.com"], "all": True}, 422, "invalid_request"),
    ({"domains": []}, 422, "invalid_request"),
    ({"domains": ["bad..name"]}, 422, "invalid_domains"),
    ({"all": True, "classifier": "nope"}, 422, "unknown_classifier"),
    ({"all": "yes"}, 422, "invalid_request"),
    ({"all": True, "only": "llm"}, 422, "invalid_request"),
    ({"batch_id": "0f8c2a7e-8f9b-4f1e-9b1a-2d5b8c7e6a10"}, 404, "batch_not_found"),
])
def test_forget_refuses_what_it_cannot_do_and_forgets_nothing(served, body: dict, status: int, code: str) -> None:  # noqa: ANN001
    container, client, auth, _key_id = served
    headers = {"Authorization": auth}
    _answered(container, client, headers, ["a.com"])
    refused = client.post("/answers/forget", json=body, headers=headers)
    assert refused.status_code == status, refused.text
    assert refused.json()["error"]["code"] == code
    assert _cached(container, "a.com") == {"a.com"}

"""Fuzzes the API from its own OpenAPI document (schemathesis): with keys required and a real
SQLite file, no request may get a 5xx and every response must match the document."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test
from starlette.applications import Starlette
from schemathesis import checks
from schemathesis.config import SchemathesisConfig
from starlette.testclient import TestClient

from firmsift.domain.keys import IssuedKey
from firmsift.entrypoints.wiring.container import Container
from firmsift.entrypoints.settings import Settings
from firmsift.services.keys import create_key

# Thousands of requests, many with made-up keys, from one client address: no rate limits.
SETTINGS = {"auth": "required", "rate_limit_per_minute": 0, "auth_failures_per_minute": 0}
FUZZ = settings(max_examples=50, deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much])


def _document_app() -> Starlette:
    """An app that only serves its document: no connection is opened to build or serve it."""
    return Container(settings=Settings(database_url="sqlite://", **SETTINGS)).api()


# A request the document refuses must be refused with one of schemathesis's usual statuses, or with
# 413: more `domains` than the document's maxItems is the contract's `413 too_many_domains`
# (README "Errors"), as a body over its size limit is `413 body_too_large`.
REFUSED = ["400", "401", "403", "404", "405", "406", "409", "415", "422", "428", "429", "5xx",  # schemathesis's own
           "413"]
CONFIG = SchemathesisConfig.from_dict({"checks": {"negative_data_rejection": {"expected-statuses": REFUSED}}})

# Loaded when the module is collected, as schemathesis generates one test per operation from it
# (its fixture-based loader does not run on this pytest); the app under test is the fixture below.
schema = schemathesis.openapi.from_asgi("/openapi.json", _document_app(), config=CONFIG)


@pytest.fixture
def served(make_container: Callable[..., Container]) -> tuple[Starlette, IssuedKey]:
    container = make_container(**SETTINGS)
    key = anyio.run(lambda: create_key("fuzz", ["team-replies", "replies.fifo"], container.api_keys()))
    return container.api(), key


def test_the_fuzzed_document_is_the_one_the_app_serves(served: tuple[Starlette, IssuedKey]) -> None:
    app, _key = served
    with TestClient(app) as client:
        assert client.get("/openapi.json").json() == schema.raw_schema


def excluded_checks(case: schemathesis.Case) -> list:
    # Only positive_data_acceptance ("schema-valid data is accepted") and use_after_free are excluded,
    # each for the operations named below. The bodies' shape (object, fields, types, mode) is checked by
    # the very models the document is generated from (entrypoints/http/contract), so what remains
    # refused is the domain's rules:
    # a string is a valid `domains` item as far as a schema can say; whether it names a public host
    # (not an IP, not `localhost`, not `a..b`) is a rule no JSON Schema expresses, and a 422 that
    # lists the offending domains is the documented answer. Likewise a CSV upload is a string to a
    # schema, which cannot say that it must parse as CSV and hold the column named by ?column=
    # (needed for CSV only). A human answer's domain is such a string too, and undoing where there is
    # no human answer is the documented 404; so is a domain to forget, and a batch id to forget that
    # is no batch of the caller's. Every other check runs.
    # DELETE /batches/{id} cancels a batch, it does not remove it: the batch stays readable as
    # CANCELLED with its results so far (README "Batches"), so "deleted resource still available"
    # is the documented behaviour for the batch's reads.
    refused_by_rules = ("POST /domains/classify", "POST /batches", "PUT /answers/{classifier}/{domain}",
                        "DELETE /answers/{classifier}/{domain}", "POST /answers/forget")
    kept_after_cancel = ("GET /batches/{batch_id}", "GET /batches/{batch_id}/results")
    excluded = [checks.positive_data_acceptance] if case.operation.label in refused_by_rules else []
    return excluded + ([checks.use_after_free] if case.operation.label in kept_after_cancel else [])


@schema.parametrize()
@FUZZ
def test_api_conforms_to_its_openapi_document(case: schemathesis.Case, served: tuple[Starlette, IssuedKey]) -> None:
    app, key = served
    response = case.call_and_validate(app=app, headers={"Authorization": f"Bearer {key.secret}"},
                                      excluded_checks=excluded_checks(case))
    assert response.status_code < 500, response.text


def test_submitted_jobs_can_be_polled_as_the_document_links_them(served: tuple[Starlette, IssuedKey]) -> None:
    """Stateful: follows the 202's GetJob link, so polls reach real jobs, not only 404s."""
    app, key = served
    seen: set[tuple[str, int]] = set()

    class Scenario(schema.as_state_machine()):  # type: ignore[misc]
        def get_call_kwargs(self, case: schemathesis.Case) -> dict:
            return {"app": app, "headers": {"Authorization": f"Bearer {key.secret}"}}

        def validate_response(self, response, case, additional_checks=None, **kwargs) -> None:  # noqa: ANN001
            assert response.status_code < 500, response.text
            seen.add((case.operation.label, response.status_code))
            case.validate_response(response, additional_checks=additional_checks, transport_kwargs=kwargs,
                                   excluded_checks=excluded_checks(case), recorder=self.recorder)

    # Derandomized: random scenarios only sometimes submit a valid job within budget, and the
    # assertion below is about this test's reach; the per-operation test above stays random.
    run_state_machine_as_test(Scenario, settings=settings(FUZZ, max_examples=20, stateful_step_count=8,
                                                          derandomize=True))
    assert ("GET /domains/classify/{job_id}", 200) in seen, "; ".join(map(str, sorted(seen)))

"""POST /batches?dry_run=true on the real app and a SQLite file: the counts the real request would
make, split by where each domain would be answered from, the expected LLM tokens and cost, and
nothing recorded, queued or asked."""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta
from pathlib import Path

import anyio
import jsonschema
import pytest
from starlette.testclient import TestClient

from firmsift.adapters.sql.store_rows import answer_params
from firmsift.adapters.sql.tables import answers
from firmsift.domain.clock import utc_now
from firmsift.domain.estimates import MIN_SAMPLES
from firmsift.domain.model import Answer, KnownCompany, ResultStatus, Source
from firmsift.services.keys import create_key

# Configured prices: the dry run prices without litellm's map (and so without a network or a key).
pytestmark = pytest.mark.container(auth="required", rate_limit_per_minute=0, llm_model="test-model",
                                   llm_input_cost_per_million=1.0, llm_output_cost_per_million=4.0)


@pytest.fixture
def key(container) -> dict[str, str]:
    issued = anyio.run(lambda: create_key("team", (), container.api_keys()))
    return {"authorization": f"Bearer {issued.secret}"}


def answer(domain: str, prompt_version: str, *, source: Source = Source.LLM, age_days: float = 1,
           tokens: tuple[int, int] | None = None, llm_seconds: float | None = None) -> Answer:
    llm = source is Source.LLM
    return Answer(domain=domain, classifier="cpg", status=ResultStatus.DONE, source=source,
                  answered_at=utc_now() - timedelta(days=age_days), answer=False if llm else None,
                  confidence=5 if llm else None, reason="seen", prompt_version=prompt_version if llm else None,
                  tokens_in=tokens[0] if tokens else None, tokens_out=tokens[1] if tokens else None,
                  site_status=None if llm else "no_dns", llm_seconds=llm_seconds,
                  evidence_seconds=None if llm_seconds is None else 1.0)


def store_answers(container, *stored: Answer) -> None:
    with container.engine().begin() as conn:
        for item in stored:
            conn.execute(answers.insert().values(**answer_params(item)))


def table_counts(database: Path) -> dict[str, int]:
    with sqlite3.connect(database) as conn:
        return {table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # noqa: S608 - fixed names
                for table in ("jobs", "job_domains", "batches", "batch_rows", "queue_messages", "answers")}


def dry_run(client: TestClient, key: dict[str, str], domains: list[object]):
    return client.post("/batches?dry_run=true", content=json.dumps({"classifier": "cpg", "domains": domains}),
                       headers={"content-type": "application/json", **key})


def test_the_dry_run_counts_each_path_and_records_nothing(client: TestClient, container, database: Path, key) -> None:
    version = container.catalog()["cpg"].prompt_version
    anyio.run(lambda: container.store().upsert_known([KnownCompany("known.com", "Known Foods")]))
    store_answers(container,
                  answer("fresh.com", version),
                  answer("stale.com", version, age_days=90),  # older than any answer may be reused
                  answer("oldprompt.com", "an older prompt"),  # a changed prompt is a new question
                  answer("parked.com", version, source=Source.PRECHECK),
                  answer("oldcheck.com", version, source=Source.PRECHECK, age_days=8))
    before = table_counts(database)
    response = dry_run(client, key, ["known.com", "shop.known.com", "https://www.Fresh.com/", "fresh.com", "stale.com",
                                     "oldprompt.com", "parked.com", "oldcheck.com", "new.com", "10.0.0.1", 7])
    assert response.status_code == 200, response.text
    body = response.json()
    assert "batch_id" not in body and "location" not in response.headers
    assert (body["dry_run"], body["total"], body["accepted"], body["duplicates"]) == (True, 11, 8, 1)
    assert [row["index"] for row in body["rejected"]] == [9, 10]
    counts = (body["known_companies"], body["cached"], body["cached_precheck"], body["to_precheck"], body["to_ask"])
    assert counts == (2, 1, 1, 4, 4)  # a subdomain of a known company is known too
    assert table_counts(database) == before  # no batch, job, row or message, and no answer asked for
    # The real request accepts exactly what the dry run counted.
    real = client.post("/batches", content=json.dumps({"classifier": "cpg", "domains": [
        "known.com", "shop.known.com", "https://www.Fresh.com/", "fresh.com", "stale.com", "oldprompt.com",
        "parked.com", "oldcheck.com", "new.com", "10.0.0.1", 7]}), headers={"content-type": "application/json", **key})
    assert (real.json()["total"], real.json()["accepted"], real.json()["duplicates"]) == (11, 8, 1)
    assert real.json()["rejected"] == body["rejected"]


def test_tokens_come_from_the_prompt_until_enough_answers_report_theirs(client: TestClient, container, key) -> None:
    first = dry_run(client, key, ["a.com", "b.com"]).json()["llm"]
    assert first["tokens_basis"].startswith("prompt length")
    per_domain = first["tokens_per_domain"]
    assert per_domain["tokens_in"] > 500 and first["tokens_in"] == 2 * per_domain["tokens_in"]
    version = container.catalog()["cpg"].prompt_version
    store_answers(container, *(answer(f"seen{i}.com", version, tokens=(1000 + 2 * (i % 2), 100))
                               for i in range(MIN_SAMPLES)))
    second = dry_run(client, key, ["a.com", "b.com", "c.com"]).json()["llm"]
    assert second["tokens_basis"] == f"average of {MIN_SAMPLES} stored answers of this classifier"
    assert (second["tokens_in"], second["tokens_out"]) == (3 * 1001, 3 * 100)
    # FIRMSIFT_LLM_*_COST_PER_MILLION: 1 USD per million in, 4 out.
    assert second["cost_usd"] == pytest.approx((3003 * 1.0 + 300 * 4.0) / 1e6)
    assert (second["cost"], second["model"], second["concurrency"]) == ("known", "test-model", 8)
    assert second["wall_time"].startswith("unknown") and second["wall_time_seconds"] is None


def test_the_wall_time_comes_from_the_stored_latencies_at_the_configured_pace(make_container) -> None:
    container = make_container(
        database="pace.db", auth="off", rate_limit_per_minute=0,
        llm_input_cost_per_million=1.0, llm_output_cost_per_million=1.0, llm_concurrency=2, worker_jobs=1,
        domain_concurrency=10, max_domains_per_job=4)
    version = container.catalog()["cpg"].prompt_version
    store_answers(container, *(answer(f"seen{i}.com", version, llm_seconds=3.0 + i % 2) for i in range(10)))
    with TestClient(container.api(), raise_server_exceptions=False) as client:
        llm = dry_run(client, {}, [f"new{i}.com" for i in range(100)]).json()["llm"]
        # 100 × 3.5 s over 2 LLM slots: 175 s; 100 × 4.5 s over 4 domains at once (one job of 4): 112.5 s.
        assert (llm["wall_time_seconds"], llm["concurrency"], llm["domains_at_once"]) == (175.0, 2, 4)
        assert llm["wall_time"].startswith("about 2 min 55 s for one worker (mean of the latest 10 answers")
        assert llm["requests_per_minute"] is None
    limited = make_container(  # the same database, another pace
        database="pace.db", auth="off", rate_limit_per_minute=0,
        llm_input_cost_per_million=1.0, llm_output_cost_per_million=1.0, llm_requests_per_minute=20)
    with TestClient(limited.api(), raise_server_exceptions=False) as client:
        llm = dry_run(client, {}, [f"new{i}.com" for i in range(100)]).json()["llm"]
        assert (llm["wall_time_seconds"], llm["requests_per_minute"]) == (300.0, 20)  # 100 requests at 20 a minute


def test_an_unpriced_model_says_its_cost_is_unknown(make_container) -> None:
    # A model on a local server has no price unless one is configured: unknown, never 0.
    container = make_container(auth="off", llm_api_base="http://127.0.0.1:9/v1")
    with TestClient(container.api(), raise_server_exceptions=False) as client:
        llm = dry_run(client, {}, ["a.com"]).json()["llm"]
        nothing = dry_run(client, {}, ["10.0.0.1"]).json()["llm"]
    assert llm["cost_usd"] is None and llm["cost"].startswith("unknown: no price for")
    assert (nothing["cost_usd"], nothing["cost"]) == (0.0, "known")  # nothing to ask costs nothing


def test_a_dry_run_of_a_csv_upload_counts_its_rows(client: TestClient, key) -> None:
    upload = "Company,Website\r\nAcme,https://www.acme.com/about\r\nBlank,\r\nAgain,ACME.com\r\n"
    response = client.post("/batches?classifier=cpg&column=Website&dry_run=true", content=upload.encode(),
                           headers={"content-type": "text/csv", **key})
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["total"], body["accepted"], body["duplicates"], body["to_ask"]) == (3, 1, 1, 1)
    assert body["rejected"][0]["line"] == 3


def test_a_bad_dry_run_value_is_refused(client: TestClient, key) -> None:
    response = client.post("/batches?dry_run=perhaps", content=b"{}", headers={"content-type": "application/json", **key})
    assert response.status_code == 400
    assert "dry_run must be true or false" in response.text


def test_the_dry_run_and_the_progress_match_their_openapi_schemas(client: TestClient, key) -> None:
    document = client.get("/openapi.json").json()
    estimate = dry_run(client, key, ["a.com", "a.com", "10.0.0.1"]).json()
    jsonschema.validate(estimate, {**document, "$ref": "#/components/schemas/BatchEstimate"})
    accepted = client.post("/batches", content=json.dumps({"classifier": "cpg", "domains": ["a.com"]}),
                           headers={"content-type": "application/json", **key}).json()
    jsonschema.validate(client.get(f"/batches/{accepted['batch_id']}", headers=key).json(),
                        {**document, "$ref": "#/components/schemas/BatchProgress"})
    parameters = document["paths"]["/batches"]["post"]["parameters"]
    assert "dry_run" in [parameter["name"] for parameter in parameters]


def test_an_economy_dry_run_is_priced_at_the_batch_price(client: TestClient, key) -> None:
    domains = ["a.com", "b.com"]
    standard = dry_run(client, key, domains).json()
    economy = client.post("/batches?dry_run=true", content=json.dumps({"classifier": "cpg", "domains": domains,
                                                                      "mode": "economy"}),
                          headers={"content-type": "application/json", **key}).json()
    assert (standard["mode"], economy["mode"]) == ("standard", "economy")
    # FIRMSIFT_ECONOMY_PRICE_FACTOR (0.5) of the configured price: litellm has no batch price for it.
    assert economy["llm"]["cost_usd"] == pytest.approx(standard["llm"]["cost_usd"] / 2)
    assert economy["llm"]["wall_time"].startswith("within 24 hours")
    refused = client.post("/batches?dry_run=true&mode=cheap", content=json.dumps({"domains": domains}),
                          headers={"content-type": "application/json", **key})
    assert refused.status_code == 422 and "'mode' must be one of standard, economy" in refused.text

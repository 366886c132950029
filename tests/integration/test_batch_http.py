"""The batch routes on the real app, a real SQLite file and the database queue: the 202 shape,
CSV uploads, 413, ownership, idempotency, DELETE, results in input order as CSV or JSON Lines, and
a batch answered by the embedded worker with its one reply."""

from __future__ import annotations

import csv
import io
import json
import time

import anyio
import pytest
from dependency_injector import providers
from starlette.testclient import TestClient

from firmsift.adapters.memory.providers import ScriptedLLM, StaticSearch
from firmsift.domain.clock import utc_now
from firmsift.domain.keys import IssuedKey
from firmsift.domain.model import Answer, DomainResult, JobStatus, ResultStatus, Source
from firmsift.entrypoints.wiring.runtime import running_worker
from firmsift.services.keys import create_key

YES = '{"is_cpg": true, "confidence": 5, "reasoning": "Makes snacks.", "quote": "makes and sells packaged snacks"}'
CSV_UPLOAD = ("Company,Website,Notes\r\nAcme,https://www.acme.com/about,=SUM(A1)\r\n"
              "Blank,,\r\nBeta,beta.org;other.org,x\r\nAcme again,ACME.com,y\r\nMail,info@mail.com,z\r\n")


pytestmark = pytest.mark.container(auth="required", rate_limit_per_minute=0, max_batch_body_bytes=4096)


@pytest.fixture
def key(container) -> dict[str, str]:
    return _bearer(anyio.run(lambda: create_key("team", ("replies",), container.api_keys())))


def _bearer(issued: IssuedKey) -> dict[str, str]:
    return {"authorization": f"Bearer {issued.secret}"}


def post_json(client: TestClient, headers: dict[str, str], domains: list[object], **extra: str):
    return client.post("/batches", content=json.dumps({"classifier": "cpg", "domains": domains}),
                       headers={"content-type": "application/json", **headers, **extra})


def post_csv(client: TestClient, headers: dict[str, str], text: str, column: str = "Website"):
    return client.post(f"/batches?classifier=cpg&column={column}", content=text.encode(),
                       headers={"content-type": "text/csv", **headers})


def test_a_json_batch_is_accepted_split_into_jobs_and_queued(client: TestClient, container, key) -> None:
    response = post_json(client, key, ["a.com", "https://www.A.com/", "10.0.0.1", *[f"d{i}.com" for i in range(12)]])
    assert response.status_code == 202, response.text
    body = response.json()
    assert set(body) == {"batch_id", "classifier", "mode", "total", "accepted", "duplicates", "rejected",
                         "rejected_total"}
    assert (body["total"], body["accepted"], body["duplicates"], body["mode"]) == (15, 13, 1, "standard")
    assert body["rejected_total"] == 1
    assert body["rejected"] == [{"index": 2, "reason": "is an IP address, not a host name"}]
    assert response.headers["location"] == f"/batches/{body['batch_id']}"
    # 13 domains in jobs of FIRMSIFT_MAX_DOMAINS_PER_JOB (10): two jobs, two messages.
    messages = anyio.run(lambda: container.work_queue().receive(max_messages=10))
    assert len(messages) == 2
    shown = client.get(f"/batches/{body['batch_id']}", headers=key).json()
    assert (shown["status"], shown["total"], shown["pending"], shown["estimated_finish_at"]) == ("RUNNING", 13, 13, None)
    assert shown["spend"] == {"tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0, "cost_unknown_domains": 0}


def test_the_answer_lists_the_first_thousand_rejected_rows_and_counts_them_all(client: TestClient, key) -> None:
    # Every rejected row listed, a list of 10 rows per allowed domain made the 202 as big as the body allows.
    domains = ["a.com", *[0] * 1200]  # 3.6 KB: within the fixture's 4 KB body limit
    response = post_json(client, key, domains)
    assert response.status_code == 202, response.text
    body = response.json()
    assert (body["total"], body["accepted"], body["rejected_total"]) == (1201, 1, 1200)
    assert [r["index"] for r in body["rejected"]] == list(range(1, 1001))
    estimate = client.post("/batches?dry_run=true", json={"domains": domains}, headers=key).json()
    assert (len(estimate["rejected"]), estimate["rejected_total"]) == (1000, 1200)


def test_a_csv_upload_keeps_its_rows_and_answers_them_in_input_order(client: TestClient, container, key) -> None:
    response = post_csv(client, key, CSV_UPLOAD)
    assert response.status_code == 202, response.text
    body = response.json()
    assert (body["total"], body["accepted"], body["duplicates"]) == (5, 2, 1)
    assert [(r["index"], r["line"]) for r in body["rejected"]] == [(1, 3), (4, 6)]
    batch_id = body["batch_id"]
    acme = anyio.run(lambda: container.batches().result_page(batch_id, after=-1, limit=1))[0].row
    answer = Answer(domain="acme.com", classifier="cpg", status=ResultStatus.DONE, answered_at=utc_now(),
                    source=Source.LLM, answer=True, confidence=4, reason="-2 cells of snacks")
    assert acme.job_id is not None
    anyio.run(lambda: container.store().save_result(acme.job_id, DomainResult.from_answer(answer, Source.LLM), answer))

    table = list(csv.reader(io.StringIO(client.get(f"/batches/{batch_id}/results?format=csv", headers=key).text)))
    assert table[0][:5] == ["Company", "Website", "Notes", "classified_domain", "status"]
    assert [row[0] for row in table[1:]] == ["Acme", "Blank", "Beta", "Acme again", "Mail"]
    assert table[1][2] == "=SUM(A1)"  # the caller's cell as sent
    reason = table[0].index("reason")
    assert table[1][reason] == "'-2 cells of snacks" and table[4][reason] == "'-2 cells of snacks"
    assert [row[4] for row in table[1:]] == ["DONE", "REJECTED", "PENDING", "DONE", "REJECTED"]
    lines = [json.loads(x) for x in client.get(f"/batches/{batch_id}/results", headers=key).text.splitlines()]
    assert lines[0]["input"] == {"Company": "Acme", "Website": "https://www.acme.com/about", "Notes": "=SUM(A1)"}
    assert lines[0]["reason"] == "-2 cells of snacks" and lines[2]["classified_domain"] == "beta.org"
    assert lines[0]["job_id"] == acme.job_id and lines[1]["job_id"] is None  # rejected: no job
    assert table[1][table[0].index("job_id")] == acme.job_id
    # ?start= resumes a download: from the row of that index (the CSV header is still sent).
    rest = [json.loads(x) for x in client.get(f"/batches/{batch_id}/results?start=3", headers=key).text.splitlines()]
    assert [line["index"] for line in rest] == [3, 4]
    tail = list(csv.reader(io.StringIO(client.get(f"/batches/{batch_id}/results?format=csv&start=4", headers=key).text)))
    assert tail[0] == table[0] and [row[0] for row in tail[1:]] == ["Mail"]
    for bad in ("-1", "x", "1.5"):
        refused = client.get(f"/batches/{batch_id}/results?start={bad}", headers=key)
        assert refused.status_code == 400 and refused.json()["error"]["code"] == "bad_start"


def test_a_batch_of_rejected_rows_only_has_ended_and_replies_at_once(client: TestClient, container, key) -> None:
    response = post_json(client, key, ["localhost", "10.0.0.1"], **{"X-Reply-Queue": "replies"})
    assert response.status_code == 202 and response.json()["accepted"] == 0
    shown = client.get(response.headers["location"], headers=key).json()
    assert (shown["status"], shown["total"], shown["rejected"]) == ("DONE", 0, 2)
    [reply] = anyio.run(lambda: container.reply_reader("replies").receive(max_messages=10))
    assert json.loads(reply.body)["batch_id"] == response.json()["batch_id"]
    header_only = post_csv(client, key, "Company,Website\r\n")
    assert header_only.status_code == 422 and "no rows" in header_only.json()["error"]["message"]


def test_a_missing_csv_column_is_named_with_the_columns_found(client: TestClient, key) -> None:
    response = post_csv(client, key, CSV_UPLOAD, column="domain")
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "no column 'domain' (found: 'Company', 'Website', 'Notes')"
    response = client.post("/batches", content=b"a\r\n", headers={"content-type": "text/csv", **key})
    assert response.status_code == 400 and "?column=" in response.json()["error"]["message"]


def test_a_body_over_the_limit_is_413_before_anything_is_stored(client: TestClient, key) -> None:
    response = post_json(client, key, [f"domain-number-{i}.com" for i in range(300)])
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "body_too_large"
    assert "FIRMSIFT_MAX_BATCH_BODY_BYTES" in response.json()["error"]["message"]


@pytest.mark.parametrize(("body", "why"), [
    ('{"domains": ["a.com", NaN]}', "NaN is not valid JSON"),
    ('{"domains": ["\\ud800.com"]}', "unpaired surrogate"),
    ('{"domains": [1e999]}', "out of range"),
    ('{"domains": ["a.com"', "not valid JSON"),
])
def test_a_json_batch_is_read_by_the_rules_of_every_json_body(client: TestClient, key, body: str, why: str) -> None:
    response = client.post("/batches", content=body, headers={**key, "content-type": "application/json"})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "malformed_json" and why in response.json()["error"]["message"]


@pytest.mark.parametrize("mode", [None, 1, ["economy"], "cheap"])
def test_a_mode_that_is_not_standard_or_economy_is_422(client: TestClient, key, mode: object) -> None:
    response = client.post("/batches", json={"domains": ["a.com"], "mode": mode}, headers=key)
    assert response.status_code == 422, response.text
    assert "mode" in response.json()["error"]["message"]


def test_other_keys_batches_are_not_found(client: TestClient, container, key) -> None:
    batch_id = post_json(client, key, ["a.com"]).json()["batch_id"]
    other = _bearer(anyio.run(lambda: create_key("other", (), container.api_keys())))
    for path in (f"/batches/{batch_id}", f"/batches/{batch_id}/results"):
        assert client.get(path, headers=other).status_code == 404
        assert client.get(path).status_code == 401
    assert client.delete(f"/batches/{batch_id}", headers=other).status_code == 404
    assert client.get("/batches/not-a-uuid", headers=key).json()["error"]["code"] == "batch_not_found"


def test_a_repeated_idempotency_key_returns_the_same_batch(client: TestClient, container, key) -> None:
    first = post_json(client, key, ["a.com", "b.com", "x"], **{"Idempotency-Key": "k1"})
    again = post_json(client, key, ["a.com", "b.com", "x"], **{"Idempotency-Key": "k1"})
    assert again.status_code == 202 and again.headers["idempotent-replayed"] == "true"
    assert again.json() == first.json()
    other = post_json(client, key, ["c.com"], **{"Idempotency-Key": "k1"})
    assert other.status_code == 422 and other.json()["error"]["code"] == "idempotency_key_reused"
    assert len(anyio.run(lambda: container.work_queue().receive(max_messages=10))) == 1


def test_delete_cancels_jobs_not_started_and_keeps_the_rest(client: TestClient, container, key) -> None:
    batch_id = post_json(client, key, [f"d{i}.com" for i in range(25)], **{"X-Reply-Queue": "replies"}).json()["batch_id"]
    [started] = anyio.run(lambda: container.work_queue().receive(max_messages=1))
    anyio.run(lambda: container.store().set_job_status(json.loads(started.body)["job_id"], JobStatus.RUNNING))
    response = client.delete(f"/batches/{batch_id}", headers=key)
    assert response.status_code == 200
    shown = response.json()
    assert (shown["status"], shown["cancelled_jobs"], shown["cancelled"], shown["pending"]) == ("CANCELLED", 2, 15, 10)
    lines = [json.loads(x) for x in client.get(f"/batches/{batch_id}/results", headers=key).text.splitlines()]
    assert {line["status"] for line in lines} == {"PENDING", "CANCELLED"}
    assert client.delete(f"/batches/{batch_id}", headers=key).json()["cancelled_jobs"] == 0


def test_delete_leaves_a_finished_batch_as_it_ended(client: TestClient, container, key) -> None:
    batch_id = post_json(client, key, ["a.com"]).json()["batch_id"]
    [message] = anyio.run(lambda: container.work_queue().receive(max_messages=1))
    anyio.run(lambda: container.store().set_job_status(json.loads(message.body)["job_id"], JobStatus.FAILED))
    shown = client.delete(f"/batches/{batch_id}", headers=key).json()
    assert (shown["status"], shown["cancelled_jobs"], shown["failed"]) == ("DONE", 0, 1)


def test_a_batch_is_answered_by_the_embedded_worker_and_replies_once(make_container) -> None:
    """The SQL wiring end to end: the database queue, the worker's reply hook, the reply queue."""
    # The pre-check is off: this sandbox's DNS knows none of these names.
    container = make_container(wait_time=0.2, poll_interval=0.05, precheck=False)
    container.llm.override(ScriptedLLM(YES, tokens=(1200, 90)))
    container.searches.override(providers.Object((StaticSearch(),)))
    domains = [f"brand{i}.example.com" for i in range(15)]
    with TestClient(container.api(background=lambda: running_worker(container))) as client:
        accepted = post_json(client, {}, [*domains, "brand0.example.com", "nope"], **{"X-Reply-Queue": "team"})
        location = accepted.headers["location"]
        for _ in range(1000):
            shown = client.get(location).json()
            if shown["status"] == "DONE":
                break
            time.sleep(0.02)
        lines = [json.loads(x) for x in client.get(f"{location}/results").text.splitlines()]
    replies = anyio.run(lambda: container.reply_reader("team").receive(max_messages=10))
    assert (shown["status"], shown["done"], shown["by_source"]) == ("DONE", 15, {"llm": 15})
    assert shown["finished_at"] is not None and shown["estimated_finish_at"] is None
    assert [line["classified_domain"] for line in lines] == [*domains, "brand0.example.com", None]
    # The batch's spend is its unique domains' per-row figures added up (the duplicate row repeats one).
    unique = lines[:15]
    assert shown["spend"]["tokens_in"] == sum(line["tokens_in"] for line in unique) == 15 * 1200
    assert shown["spend"]["tokens_out"] == sum(line["tokens_out"] for line in unique) == 15 * 90
    assert shown["spend"]["cost_unknown_domains"] == sum(line["cost_usd"] is None for line in unique)
    assert shown["spend"]["cost_usd"] == pytest.approx(sum(line["cost_usd"] or 0.0 for line in unique))
    assert [json.loads(reply.body)["status"] for reply in replies] == ["DONE"]

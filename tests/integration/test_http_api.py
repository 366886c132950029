"""The HTTP API on the real app, a real SQLite file and the real database queue."""

import json
import logging

import anyio
import pytest
from dependency_injector import providers
from sqlalchemy import text
from starlette.testclient import TestClient

from firmsift.adapters.memory.queue import InMemoryQueue
from firmsift.domain.clock import utc_now
from firmsift.adapters.sql.engine import make_engine
from firmsift.domain.model import Answer, DomainResult, Evidence, ResultStatus, Source
from firmsift.services.submit import RecordThenPublish

from firmsift.ports.infrastructure_errors import QueueUnavailable


pytestmark = pytest.mark.container(max_body_bytes=2048)


def post(client: TestClient, body: object, **headers: str):
    return client.post("/domains/classify", content=json.dumps(body),
                       headers={"content-type": "application/json", **headers})


def error_of(response) -> dict:
    body = response.json()
    assert set(body) == {"error"} and {"code", "message", "details"} <= set(body["error"])
    return body["error"]


def test_accepts_a_job_writes_it_pending_and_queues_its_id(client: TestClient, container) -> None:
    response = post(client, {"classifier": "cpg", "domains": ["https://www.Example.com/x", "example.com", "b.org"]})
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "PENDING" and body["classifier"] == "cpg"
    assert body["domains"] == ["example.com", "b.org"]
    assert response.headers["location"] == f"/domains/classify/{body['job_id']}"
    polled = client.get(f"/domains/classify/{body['job_id']}").json()
    assert polled["status"] == "PENDING"
    assert [(r["domain"], r["status"]) for r in polled["results"]] == [("example.com", "PENDING"), ("b.org", "PENDING")]
    messages = anyio.run(lambda: container.work_queue().receive(max_messages=5))
    assert [json.loads(m.body) for m in messages] == [{"job_id": body["job_id"]}]


def test_a_finished_domain_says_whose_evidence_its_answer_used(client: TestClient, container) -> None:
    job_id = post(client, {"domains": ["a.com", "b.com"]}).json()["job_id"]
    answer = Answer(domain="a.com", classifier="cpg", status=ResultStatus.DONE, answered_at=utc_now(),
                    source=Source.LLM, answer=True, confidence=4, reason="Makes snacks.",
                    evidence=(Evidence("https://a.com/", "A", "Snacks"),), evidence_status="found",
                    search_provider="searxng")
    anyio.run(lambda: container.store().save_result(job_id, DomainResult.from_answer(answer, Source.LLM), answer))
    results = client.get(f"/domains/classify/{job_id}").json()["results"]
    assert [(r["domain"], r["evidence_status"], r["search_provider"]) for r in results] == [
        ("a.com", "found", "searxng"), ("b.com", None, None)]


def test_every_invalid_domain_is_named_with_its_reason(client: TestClient) -> None:
    response = post(client, {"domains": ["ok.com", "localhost", "10.0.0.1", 5, "a..b.com"]})
    assert response.status_code == 422
    error = error_of(response)
    assert error["code"] == "invalid_domains"
    assert [d["value"] for d in error["details"]] == ["localhost", "10.0.0.1", 5, "a..b.com"]
    assert all(d["reason"] for d in error["details"])


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"domains": []}, 422, "invalid_request"),
        ({"domains": "example.com"}, 422, "invalid_request"),
        ({"domains": None}, 422, "invalid_request"),
        ({}, 422, "invalid_request"),
        ([], 422, "invalid_request"),
        ("example.com", 422, "invalid_request"),
        ({"domains": ["a.com"], "domain": "x"}, 422, "invalid_request"),
        ({"classifier": "nope", "domains": ["a.com"]}, 422, "unknown_classifier"),
        ({"classifier": 7, "domains": ["a.com"]}, 422, "unknown_classifier"),
        ({"domains": [f"d{i}.com" for i in range(11)]}, 413, "too_many_domains"),
    ],
)
def test_bad_requests_get_a_clear_json_error(client: TestClient, body: object, status: int, code: str) -> None:
    response = post(client, body)
    assert response.status_code == status
    error = error_of(response)
    assert error["code"] == code and error["message"]


def test_duplicates_count_once_against_the_cap(client: TestClient) -> None:
    domains = [f"d{i}.com" for i in range(10)] + [f"https://www.d{i}.com/" for i in range(10)]
    assert post(client, {"domains": domains}).status_code == 202


def test_too_many_domains_lists_the_ones_over_the_limit(client: TestClient) -> None:
    error = error_of(post(client, {"domains": [f"d{i}.com" for i in range(12)]}))
    assert [d["value"] for d in error["details"]] == ["d10.com", "d11.com"]


@pytest.mark.parametrize(
    ("content", "content_type", "status", "code"),
    [
        (b'{"domains": ["a.com"]', "application/json", 400, "malformed_json"),
        (b"", "application/json", 400, "malformed_json"),
        (b'{"domains": [NaN]}', "application/json", 400, "malformed_json"),
        (b"\xff\xfe", "application/json", 400, "malformed_json"),
        (b"[" * 5000 + b"]" * 5000, "application/json", 413, "body_too_large"),
        (b'{"domains": ["a.com"]}', "text/plain", 415, "unsupported_media_type"),
        (b'{"domains": ["a.com"]}', "", 415, "unsupported_media_type"),
        (b'{"domains": ["' + b"a" * 3000 + b'.com"]}', "application/json", 413, "body_too_large"),
    ],
)
def test_unusable_bodies(client: TestClient, content: bytes, content_type: str, status: int, code: str) -> None:
    response = client.post("/domains/classify", content=content, headers={"content-type": content_type})
    assert response.status_code == status
    assert error_of(response)["code"] == code


def test_deeply_nested_json_is_malformed_not_a_crash(make_container) -> None:
    container = make_container(max_body_bytes=1_000_000)
    with TestClient(container.api(), raise_server_exceptions=False) as client:
        response = client.post("/domains/classify", content=b"[" * 200_000 + b"]" * 200_000,
                               headers={"content-type": "application/json"})
    assert response.status_code in (400, 422)


def test_json_charset_parameter_is_accepted(client: TestClient) -> None:
    response = client.post("/domains/classify", content=b'{"domains": ["a.com"]}',
                           headers={"content-type": "application/json; charset=utf-8"})
    assert response.status_code == 202


def test_reply_queue_header_is_checked_and_stored(client: TestClient, container) -> None:
    assert post(client, {"domains": ["a.com"]}, **{"x-reply-queue": "bad name!"}).status_code == 422
    ok = post(client, {"domains": ["a.com"]}, **{"x-reply-queue": "team-replies"})
    assert ok.status_code == 202
    job = anyio.run(container.store().get_job, ok.json()["job_id"])
    assert job.reply_queue == "team-replies"


# A fixed well-formed id nobody created: one drawn at collection would differ between xdist workers.
UNKNOWN_JOB_ID = "0b5d6f7e-3c1a-4e8b-9f2d-6a7c8e9f0a1b"


@pytest.mark.parametrize("job_id", [UNKNOWN_JOB_ID, "not-a-uuid", "1" * 500, "%00", "../../etc/passwd"])
def test_unknown_or_malformed_job_ids_are_404(client: TestClient, job_id: str) -> None:
    response = client.get(f"/domains/classify/{job_id}")
    assert response.status_code == 404
    assert error_of(response)["code"] in ("job_not_found", "not_found")


def test_unknown_routes_and_methods_are_json_errors(client: TestClient) -> None:
    assert error_of(client.get("/nope"))["code"] == "not_found"
    response = client.get("/domains/classify")
    assert response.status_code == 405 and error_of(response)["code"] == "method_not_allowed"


def test_an_unpublishable_job_is_503_and_never_left_pending(container) -> None:
    """A queue outside the database (SQS): the row is kept but marked FAILED."""
    broken = InMemoryQueue("jobs", visibility_timeout=30, max_receives=5)
    broken.fail_next_send(QueueUnavailable("disk full"))
    with container.intake.override(RecordThenPublish(container.store(), broken)), \
            TestClient(container.api()) as client:
        response = post(client, {"domains": ["a.com"]})
    assert response.status_code == 503
    assert response.headers["retry-after"] == "5"
    assert error_of(response)["code"] == "queue_unavailable"
    with container.engine().connect() as conn:
        assert [row[0] for row in conn.execute(text("SELECT status FROM jobs"))] == ["FAILED"]


def test_database_queue_failure_is_503_and_records_nothing(container) -> None:
    """The database queue: job row and message share one transaction, so nothing is left behind."""
    with container.engine().begin() as conn:
        conn.execute(text("DROP TABLE queue_dedup"))
    with TestClient(container.api()) as client:
        response = post(client, {"domains": ["a.com"]})
    assert response.status_code == 503
    with container.engine().connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM jobs")).scalar() == 0
        assert conn.execute(text("SELECT count(*) FROM job_domains")).scalar() == 0


def test_a_database_failure_on_poll_is_503_and_the_log_keeps_the_driver_error(
        client: TestClient, container, caplog: pytest.LogCaptureFixture) -> None:
    job_id = post(client, {"domains": ["a.com"]}).json()["job_id"]
    with container.engine().begin() as conn:
        conn.execute(text("DROP TABLE job_domains"))
    with caplog.at_level(logging.ERROR, logger="firmsift.entrypoints.http.errors"):
        response = client.get(f"/domains/classify/{job_id}")
    assert response.status_code == 503 and response.headers["retry-after"] == "5"
    assert error_of(response) == {"code": "service_unavailable", "details": [],
                                  "message": "the database or queue is unavailable; try again later"}
    [logged] = [record for record in caplog.records if record.getMessage() == "backend unavailable"]
    assert logged.error.startswith("OperationalError: (sqlite3.OperationalError) no such table: job_domains")


def test_no_free_database_connection_is_503_not_500(container, caplog: pytest.LogCaptureFixture) -> None:
    """Every connection of the pool busy past its timeout (here the file's one, held below) is an
    outage the caller can wait out: 503 with Retry-After, SQLAlchemy's words in the log only."""
    container.engine().dispose()
    container.engine.override(providers.Singleton(make_engine, container.settings().database_url,
                                                  sqlite_pool_timeout=0.1))
    with TestClient(container.api(), raise_server_exceptions=False) as client:
        job_id = post(client, {"domains": ["a.com"]}).json()["job_id"]
        with container.engine().connect(), caplog.at_level(logging.ERROR, logger="firmsift.entrypoints.http.errors"):
            polled = client.get(f"/domains/classify/{job_id}")
            posted = post(client, {"domains": ["b.com"]})
        assert client.get(f"/domains/classify/{job_id}").status_code == 200  # the connection is back
    assert polled.status_code == posted.status_code == 503
    assert polled.headers["retry-after"] == posted.headers["retry-after"] == "5"
    assert error_of(polled)["code"] == "service_unavailable"
    assert error_of(posted)["code"] == "queue_unavailable"  # the intake's own word: the job was not accepted
    [logged] = [record for record in caplog.records if record.getMessage() == "backend unavailable"]
    assert logged.error.startswith("TimeoutError: QueuePool limit of size 1 overflow 0 reached")


def test_health(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}


@pytest.mark.parametrize(
    ("content", "headers", "status", "code"),
    [
        (b'{"domains": ["\\ud800.com"]}', {}, 400, "malformed_json"),
        (b'{"domains": [1e400]}', {}, 400, "malformed_json"),
        (b'{"domains": ["a.com"]}', {"content-length": "+5"}, 400, "bad_content_length"),
        # The byte 0xB2 reads as "²" (headers are Latin-1), a digit to str.isdigit().
        (b'{"domains": ["a.com"]}', {"content-length": b"\xb2"}, 400, "bad_content_length"),
        # More digits than int() reads (4,300): too large, not a 500.
        (b'{"domains": ["a.com"]}', {"content-length": "9" * 5000}, 413, "body_too_large"),
        (b'{"domains": ["a.com"]}', {"content-type": "application/problem+json"}, 415, "unsupported_media_type"),
    ],
)
def test_odd_bodies_found_in_review_are_clear_errors(client: TestClient, content: bytes, headers: dict,
                                                     status: int, code: str) -> None:
    response = client.post("/domains/classify", content=content,
                           headers={"content-type": "application/json", **headers})
    assert response.status_code == status
    assert error_of(response)["code"] == code


@pytest.mark.parametrize("queue", ["firmsift-jobs", "firmsift-jobs-dlq"])
def test_firmsifts_own_queues_are_refused_as_reply_queues(client: TestClient, queue: str) -> None:
    response = post(client, {"domains": ["a.com"]}, **{"x-reply-queue": queue})
    assert response.status_code == 422 and "own queues" in response.text


@pytest.fixture
def roomy_client(make_container, api_client) -> TestClient:
    """Room for more entries than the default allows: 20 unique domains, 200 entries, 64 KB."""
    return api_client(make_container(max_body_bytes=65536, max_domains_per_job=20).api())


@pytest.mark.parametrize(("values", "status", "code", "omitted"), [
    ([7] * 150, 422, "invalid_domains", 50),  # every one refused: "must be a string"
    ([f"d{i}.com" for i in range(200)], 413, "too_many_domains", 80),  # 180 over the limit
])
def test_an_error_lists_the_first_100_values_and_counts_the_rest(roomy_client: TestClient, values: list,
                                                                 status: int, code: str, omitted: int) -> None:
    request = json.dumps({"domains": values}).encode()
    response = roomy_client.post("/domains/classify", content=request, headers={"content-type": "application/json"})
    assert response.status_code == status
    error = error_of(response)
    assert error["code"] == code and len(error["details"]) == 100 and error["details_omitted"] == omitted
    assert "first 100" in error["message"]
    assert len(response.content) < 60 * 100 + 300  # under 60 bytes a detail, however many were refused


def test_more_entries_than_allowed_are_refused_unread(roomy_client: TestClient) -> None:
    response = post(roomy_client, {"domains": ["a.com"] * 201})
    assert response.status_code == 413
    error = error_of(response)
    assert error["code"] == "too_many_domains" and "at most 200" in error["message"]


def test_echoed_values_are_cut_whatever_their_type(roomy_client: TestClient) -> None:
    response = post(roomy_client, {"domains": [10**1000, "x" * 5000, [1] * 1000, 1.5, None, True]})
    details = error_of(response)["details"]
    assert [len(str(d["value"])) <= 201 for d in details] == [True] * 6
    assert [d["value"] for d in details[3:]] == [1.5, None, True]
    assert all(len(d["reason"]) <= 201 for d in details)


@pytest.mark.parametrize("domain", ["a.com:\u00b2", "https://a.com:\u2460/x", "a.com:\uff18\uff10", "",
                                    "\u4e00\u4e01" * 8000 + ".com", "xn--n3h.com", "\u2603.com"])
def test_hostile_domains_are_refused_with_a_reason_never_a_500(client: TestClient, domain: str) -> None:
    response = client.post("/domains/classify", content=json.dumps({"domains": [domain]}, ensure_ascii=False),
                           headers={"content-type": "application/json"})
    if len(response.request.content) > 2048:
        assert response.status_code == 413
        return
    assert response.status_code == 422, response.text
    assert error_of(response)["details"][0]["reason"]


def test_straße_and_strasse_are_two_domains(client: TestClient) -> None:
    response = post(client, {"domains": ["straße.de", "strasse.de", "xn--strae-oqa.de"]})
    assert response.status_code == 202
    assert response.json()["domains"] == ["xn--strae-oqa.de", "strasse.de"]


def test_the_document_says_what_the_api_refuses_about_domains(client: TestClient) -> None:
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    domains = schemas["SubmitRequest"]["properties"]["domains"]
    # {"domains": [""]} was schema-valid but refused; more than 100 entries (10 unique by default) are 413.
    assert domains["items"] == {"type": "string", "minLength": 1}
    assert (domains["minItems"], domains["maxItems"]) == (1, 100)
    error = schemas["ErrorObject"]
    assert error["properties"]["details"]["maxItems"] == 100
    assert error["properties"]["details_omitted"] == {"type": "integer", "minimum": 1,
                                                      "description": "offending values not listed, when there are more"}
    assert post(client, {"domains": [""]}).status_code == 422
    assert post(client, {"domains": ["a.com"] * 101}).status_code == 413

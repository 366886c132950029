"""API keys on the real app and a real SQLite file: 401/403/404/429/431, owners, and the `keys` command."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from starlette.testclient import TestClient

from firmsift.domain.keys import IssuedKey, digest_of
from firmsift.entrypoints.wiring import serving as serve_command
from firmsift.entrypoints.cli.classify_command import run_classify
from firmsift.entrypoints.command_errors import CommandError
from firmsift.entrypoints.http.auth import UnsafeAuthSetting
from firmsift.entrypoints.cli.main import build_parser
from firmsift.services.keys import create_key, revoke_key

REPO = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.container(auth="required", rate_limit_per_minute=0, max_header_bytes=4096)


def new_key(container, name: str = "team", *queues: str) -> IssuedKey:
    return anyio.run(lambda: create_key(name, queues, container.api_keys()))


def bearer(key: IssuedKey) -> dict[str, str]:
    return {"authorization": f"Bearer {key.secret}"}


def post(client: TestClient, headers: dict[str, str], body: object = None):
    return client.post("/domains/classify", content=json.dumps(body or {"domains": ["a.com"]}),
                       headers={"content-type": "application/json", **headers})


def error_of(response) -> dict:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    return body["error"]


def test_without_a_key_both_job_routes_are_401_with_a_bearer_challenge(client: TestClient, container) -> None:
    for response in (post(client, {}), client.get("/domains/classify/6f9619ff-8b86-d011-b42d-00c04fc964ff")):
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
        assert error_of(response)["code"] == "missing_api_key"
    with container.engine().connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM jobs").scalar() == 0


@pytest.mark.parametrize("headers", [{"authorization": "Bearer fs_wrong"}, {"x-api-key": "fs_wrong"},
                                     {"authorization": "Bearer sk-not-even-ours"}])
def test_a_wrong_key_is_401_invalid(client: TestClient, container, headers: dict[str, str]) -> None:
    new_key(container)
    response = post(client, headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Bearer error="invalid_token"'
    assert error_of(response)["code"] == "invalid_api_key"


def test_a_key_works_in_either_header_until_it_is_revoked(client: TestClient, container) -> None:
    key = new_key(container)
    assert post(client, bearer(key)).status_code == 202
    assert post(client, {"x-api-key": key.secret}).status_code == 202
    anyio.run(lambda: revoke_key(key.record.id, container.api_keys()))
    response = post(client, bearer(key))
    assert response.status_code == 401 and error_of(response)["code"] == "invalid_api_key"


def test_a_key_reads_its_own_jobs_and_gets_404_for_anyone_elses(client: TestClient, container) -> None:
    mine, theirs = new_key(container, "mine"), new_key(container, "theirs")
    job_id = post(client, bearer(mine)).json()["job_id"]
    assert client.get(f"/domains/classify/{job_id}", headers=bearer(mine)).status_code == 200
    hidden = client.get(f"/domains/classify/{job_id}", headers=bearer(theirs))
    unknown = client.get("/domains/classify/6f9619ff-8b86-d011-b42d-00c04fc964ff", headers=bearer(theirs))
    assert hidden.status_code == unknown.status_code == 404
    assert error_of(hidden)["code"] == error_of(unknown)["code"] == "job_not_found"
    job = anyio.run(container.store().get_job, job_id)
    assert job.owner == mine.record.id


def test_reply_queues_are_limited_to_the_keys_list(client: TestClient, container) -> None:
    listed, bare = new_key(container, "listed", "team-replies"), new_key(container, "bare")
    assert post(client, {**bearer(listed), "x-reply-queue": "team-replies"}).status_code == 202
    for key, queue in ((listed, "other-replies"), (bare, "team-replies")):
        response = post(client, {**bearer(key), "x-reply-queue": queue})
        assert response.status_code == 403
        error = error_of(response)
        assert error["code"] == "reply_queue_not_allowed" and error["details"][0]["value"] == queue
    assert post(client, bearer(bare)).status_code == 202  # no reply queue needs no permission


def test_the_rate_limit_is_per_key_with_retry_after(make_container) -> None:
    container = make_container(auth="required", rate_limit_per_minute=3)
    busy, calm = new_key(container, "busy"), new_key(container, "calm")
    with TestClient(container.api()) as client:
        statuses = [post(client, bearer(busy)).status_code for _ in range(3)]
        limited = client.get("/domains/classify/6f9619ff-8b86-d011-b42d-00c04fc964ff", headers=bearer(busy))
        assert post(client, bearer(calm)).status_code == 202
        assert client.get("/healthz").status_code == 200  # open routes are not counted
    assert statuses == [202, 202, 202]
    assert limited.status_code == 429 and error_of(limited)["code"] == "rate_limited"
    assert 1 <= int(limited.headers["retry-after"]) <= 20


@pytest.mark.parametrize("path", ["/healthz", "/domains/classify/6f9619ff-8b86-d011-b42d-00c04fc964ff"])
def test_oversize_headers_are_431_on_every_route(client: TestClient, container, path: str) -> None:
    key = new_key(container)
    response = client.get(path, headers={**bearer(key), "x-padding": "p" * 4096})
    assert response.status_code == 431 and error_of(response)["code"] == "headers_too_large"
    assert client.get(path, headers={**bearer(key), "x-padding": "p" * 1000}).status_code in (200, 404)


def test_open_routes_need_no_key(client: TestClient) -> None:
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200
    assert client.get("/metrics").status_code == 200
    document = client.get("/openapi.json").json()
    assert document["paths"]["/domains/classify"]["post"]["security"]


def test_auto_requires_keys_off_loopback_and_off_is_refused_there(make_container) -> None:
    auto = make_container()
    with TestClient(auto.api(host="0.0.0.0")) as client:
        assert post(client, {}).status_code == 401
    with TestClient(auto.api(host="127.0.0.1")) as client:
        assert post(client, {}).status_code == 202
    off = make_container(auth="off")
    with pytest.raises(UnsafeAuthSetting):
        off.api(host="0.0.0.0")


def test_serve_passes_the_header_limit_to_uvicorn(container, monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    seen: dict[str, object] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: seen.update(options))
    assert serve_command.serve(container, "127.0.0.1", 0, with_worker=False) == serve_command.EXIT_OK
    assert seen["h11_max_incomplete_event_size"] == 4096 + serve_command.REQUEST_LINE_ROOM


def firmsift(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}", **env}
    return subprocess.run([sys.executable, "-m", "firmsift.entrypoints.cli.main", *args], cwd=REPO, env=environment,
                          capture_output=True, text=True, timeout=60)


def test_keys_cli_prints_a_key_once_stores_only_its_digest_and_revokes(tmp_path: Path) -> None:
    assert firmsift(tmp_path, "db", "upgrade").returncode == 0  # `keys` never creates a database
    created = firmsift(tmp_path, "keys", "create", "--name", "billing", "--reply-queue", "billing-replies")
    assert created.returncode == 0, created.stderr
    secret = created.stdout.strip()
    assert secret.startswith("fs_") and "\n" not in secret
    listed = firmsift(tmp_path, "keys", "list")
    assert listed.returncode == 0 and secret not in listed.stdout + listed.stderr
    [row] = [json.loads(line) for line in listed.stdout.splitlines()]
    assert row["name"] == "billing" and row["reply_queues"] == ["billing-replies"] and row["revoked_at"] is None
    assert row["id"] in created.stderr
    with sqlite3.connect(tmp_path / "cli.db") as db:
        stored = db.execute("SELECT * FROM api_keys").fetchall()
    assert stored == [(row["id"], "billing", digest_of(secret), '["billing-replies"]', stored[0][4], None, None)]
    for file in tmp_path.glob("cli.db*"):  # the database and its WAL
        assert secret.encode() not in file.read_bytes()

    revoked = firmsift(tmp_path, "keys", "revoke", row["id"])
    assert revoked.returncode == 0 and "revoked" in revoked.stdout
    assert json.loads(firmsift(tmp_path, "keys", "list").stdout)["revoked_at"]
    unknown = firmsift(tmp_path, "keys", "revoke", "key_nope")
    assert unknown.returncode == 1 and "key_nope" in unknown.stderr
    bad = firmsift(tmp_path, "keys", "create", "--name", "x", "--reply-queue", "no spaces!")
    assert bad.returncode == 2 and "X-Reply-Queue" in bad.stderr


def test_keys_cli_sets_and_shows_daily_limits_and_spend_today(tmp_path: Path) -> None:
    assert firmsift(tmp_path, "db", "upgrade").returncode == 0
    created = firmsift(tmp_path, "keys", "create", "--name", "capped", "--daily-limit", "5")
    assert created.returncode == 0, created.stderr
    listed = firmsift(tmp_path, "keys", "list", FIRMSIFT_DAILY_SPEND_LIMIT_USD="20")
    [row] = [json.loads(line) for line in listed.stdout.splitlines()]
    assert (row["daily_limit_usd"], row["spent_today_usd"], row["cost_unknown_today"]) == (5, 0, 0)
    assert "all keys spent 0 USD of a global limit of 20 USD" in listed.stderr
    assert "global limit of none" in firmsift(tmp_path, "keys", "list", FIRMSIFT_DAILY_SPEND_LIMIT_USD="").stderr

    raised = firmsift(tmp_path, "keys", "set-limit", row["id"], "12.5")
    assert raised.returncode == 0 and "a daily limit of 12.5 USD" in raised.stdout
    assert json.loads(firmsift(tmp_path, "keys", "list").stdout)["daily_limit_usd"] == 12.5
    removed = firmsift(tmp_path, "keys", "set-limit", row["id"], "none")
    assert removed.returncode == 0 and "no daily limit" in removed.stdout
    assert json.loads(firmsift(tmp_path, "keys", "list").stdout)["daily_limit_usd"] is None

    unknown = firmsift(tmp_path, "keys", "set-limit", "key_nope", "1")
    assert unknown.returncode == 1 and "key_nope" in unknown.stderr
    for bad in (["set-limit", row["id"], "-3"], ["set-limit", row["id"], "lots"], ["create", "--name", "x", "--daily-limit", "nan"]):
        refused = firmsift(tmp_path, "keys", *bad)
        assert refused.returncode == 2 and "USD" in refused.stderr, refused.stderr


@pytest.mark.parametrize("command", ["api", "serve"])
def test_auth_off_is_refused_on_a_public_address(tmp_path: Path, command: str) -> None:
    result = firmsift(tmp_path, command, "--host", "0.0.0.0", "--port", "1", FIRMSIFT_AUTH="off")
    assert result.returncode == 2
    assert "FIRMSIFT_AUTH=off" in result.stderr and "loopback" in result.stderr


def test_classify_sends_the_key_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx

    sent: list[str | None] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        sent.append(request.headers.get("authorization"))
        return httpx.Response(401, json={"error": {"code": "invalid_api_key", "message": "not valid", "details": []}})

    real_client = httpx.Client
    # `classify` imports httpx when it runs (the API process must not carry it): patch the module.
    monkeypatch.setattr(httpx, "Client", lambda **options: real_client(transport=httpx.MockTransport(refuse), **options))
    monkeypatch.setenv("FIRMSIFT_API_KEY", "fs_from_env")
    args = build_parser().parse_args(["classify", "a.com"])
    with pytest.raises(CommandError, match="requires an API key: pass --api-key KEY or set FIRMSIFT_API_KEY"):
        run_classify(args)
    assert sent == ["Bearer fs_from_env"]


def test_unknown_keys_are_limited_per_client_address(make_container) -> None:
    container = make_container(auth="required", auth_failures_per_minute=2)
    key = new_key(container)
    with TestClient(container.api(), client=("203.0.113.7", 40000)) as attacker, \
            TestClient(container.api(), client=("198.51.100.1", 40000)) as bystander:
        guesses = [post(attacker, {"authorization": f"Bearer fs_guess{n}"}).status_code for n in range(3)]
        refused = post(attacker, {"authorization": "Bearer fs_guess9"})
        valid_from_elsewhere = post(bystander, {"authorization": f"Bearer fs_guess{9}"}).status_code
        valid = post(bystander, bearer(key)).status_code
    assert guesses == [401, 401, 429]
    assert refused.status_code == 429 and error_of(refused)["code"] == "rate_limited"
    assert int(refused.headers["retry-after"]) >= 1
    assert (valid_from_elsewhere, valid) == (401, 202)

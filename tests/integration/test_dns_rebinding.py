"""DNS rebinding against the keyless default: a page at attacker.example whose name points at
127.0.0.1 is same-origin with the API, but its requests name its own host. With the default
FIRMSIFT_ALLOWED_HOSTS every route answers such a request 421 (the health probes excepted), the
web app's pages and their CSRF tokens included; the names the API is reached by on this machine
are served, whatever their case, port, brackets or trailing dot."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from firmsift.entrypoints.wiring.container import Container

ATTACKER = "http://attacker.example:8000"
# What a rebound page can do: spend (POST /batches), write (PUT /answers), read the web app.
PAID_AND_WRITTEN = [("POST", "/batches", {"json": {"classifier": "cpg", "domains": ["acme.com"]}}),
                    ("POST", "/domains/classify", {"json": {"domains": ["acme.com"]}}),
                    ("PUT", "/answers/cpg/acme.com", {"json": {"answer": False, "note": "rebound"}}),
                    ("POST", "/answers/forget", {"json": {"all": True}})]
READ = ["/", "/new", "/human-answers", "/openapi.json", "/metrics", "/answers", "/static/app.js"]


@pytest.fixture
def build(make_container: Callable[..., Container], monkeypatch: pytest.MonkeyPatch) -> Callable[..., Starlette]:
    """Builds the API on one SQLite file with these settings (FIRMSIFT_ALLOWED_HOSTS unset unless
    given: the default, not the tests' own list) and the listening address `host`."""
    monkeypatch.delenv("FIRMSIFT_ALLOWED_HOSTS", raising=False)

    def app(host: str = "127.0.0.1", **settings: object) -> Starlette:
        return make_container(database="rebind.db", precheck=False, **settings).api(host=host)

    return app


def misdirected(response) -> bool:  # noqa: ANN001
    return (response.status_code == 421 and response.headers["content-type"] == "application/json"
            and response.json()["error"]["code"] == "host_not_allowed"
            and "FIRMSIFT_ALLOWED_HOSTS" in response.json()["error"]["message"])


def test_without_keys_a_rebound_page_gets_421_everywhere_but_the_health_probes(build) -> None:  # noqa: ANN001
    app = build()
    with TestClient(app, base_url=ATTACKER) as attacker, TestClient(app, base_url="http://127.0.0.1:8000") as owner:
        for method, path, body in PAID_AND_WRITTEN:
            assert misdirected(attacker.request(method, path, **body)), (method, path)
        for path in READ:
            page = attacker.get(path)
            assert misdirected(page), path
            assert 'name="csrf' not in page.text and page.headers["x-content-type-options"] == "nosniff"
        token = owner.get("/new").text.split('name="csrf-token" content="')[1].split('"')[0]
        assert misdirected(attacker.post("/new/submit?kind=list", content=b"acme.com\n",
                                         headers={"content-type": "text/plain", "x-csrf-token": token}))
        for probe in ("/healthz", "/readyz"):
            assert attacker.get(probe).status_code == 200, probe

        # Nothing was done: no batch, no job, no human answer.
        assert owner.get("/answers").json()["answers"] == []
        assert "No batches yet" in owner.get("/").text
        assert "firmsift_jobs_accepted_total 0.0" in owner.get("/metrics").text


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST.", "localhost.:8000", "127.0.0.1", "127.0.0.1:1",
                                  "[::1]", "[::1]:8000", "[0:0::1]:8000"])
def test_the_names_of_this_machine_are_served_in_any_spelling(build, host: str) -> None:  # noqa: ANN001
    with TestClient(build(), base_url="http://127.0.0.1") as client:
        new = client.get("/new", headers={"host": host})
        assert new.status_code == 200 and 'name="csrf-token"' in new.text, host
        accepted = client.post("/batches", json={"classifier": "cpg", "domains": ["acme.com"]}, headers={"host": host})
        assert accepted.status_code == 202, (host, accepted.text)


@pytest.mark.parametrize("host", ["attacker.example", "localhost.attacker.example", "127.0.0.1.nip.io",
                                  "localhost..", "localhost:abc", "[::2]", "127.0.0.2", "testserver", ""])
def test_any_other_host_is_refused(build, host: str) -> None:  # noqa: ANN001
    with TestClient(build(), base_url="http://127.0.0.1") as client:
        assert misdirected(client.get("/new", headers={"host": host})), host


def test_the_address_listened_on_is_served_too(build) -> None:  # noqa: ANN001
    with TestClient(build(host="127.0.0.2"), base_url="http://127.0.0.2:8000") as client:
        assert client.get("/new").status_code == 200


def test_with_keys_any_host_reaches_the_key_check_unless_the_setting_names_hosts(build) -> None:  # noqa: ANN001
    with TestClient(build(host="0.0.0.0"), base_url="http://10.1.2.3:8000") as client:
        assert client.post("/batches", json={"domains": ["acme.com"]}).status_code == 401
    named = build(host="0.0.0.0", allowed_hosts="firmsift.example.com")
    with TestClient(named, base_url=ATTACKER) as stranger, \
            TestClient(named, base_url="https://FirmSift.example.com") as client:
        assert misdirected(stranger.post("/batches", json={"domains": ["acme.com"]}))
        assert stranger.get("/healthz").status_code == 200  # probes by the pod's address
        assert client.post("/batches", json={"domains": ["acme.com"]}).status_code == 401
    with TestClient(build(allowed_hosts="*"), base_url=ATTACKER) as client:  # a proxy checks Host itself
        assert client.get("/new").status_code == 200


def test_the_document_lists_421_where_it_can_be_answered(build) -> None:  # noqa: ANN001
    with TestClient(build(), base_url="http://localhost") as client:
        document = client.get("/openapi.json").json()
    for path, operations in document["paths"].items():
        for operation in operations.values():
            assert ("421" in operation["responses"]) == (path not in ("/healthz", "/readyz")), path
    with TestClient(build(host="0.0.0.0"), base_url="http://localhost") as client:
        unchecked = client.get("/openapi.json").json()
    assert not any("421" in o["responses"] for operations in unchecked["paths"].values() for o in operations.values())

"""Signing in to the web app on the real app and a SQLite file, against a hostile client: showing
the form and every refused attempt write nothing to the database, the form's token is refused when
missing, forged, another browser's or expired, and attempts are limited per client address (429
with Retry-After) without blocking other addresses. Time is a fake clock, never waited for."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from firmsift.domain.sign_in_forms import FORM_SECONDS, issue_form_token
from firmsift.entrypoints.web.sign_in import FORM_COOKIE
from firmsift.entrypoints.web.site import COOKIE
from tests.support.clocks import Clock
from tests.support.web_sessions import form_token, issue

ATTEMPTS = 3  # sign-in attempts a minute per address, in these tests
BASE = "https://testserver"


pytestmark = [pytest.mark.container(auth="required", rate_limit_per_minute=0, sign_ins_per_minute=ATTEMPTS),
              pytest.mark.client(base_url=BASE, client=("192.0.2.1", 50000))]


@pytest.fixture
def clock() -> Clock:
    return Clock(1_800_000_000.0)


@pytest.fixture
def app(container, clock: Clock):
    """The app, on the fake clock."""
    return container.api(clock=clock)


def contents(database: Path) -> list[str]:
    """Every row of every table, as SQL: equal before and after means nothing was written."""
    with sqlite3.connect(database) as conn:
        return list(conn.iterdump())


def session_rows(database: Path) -> int:
    with sqlite3.connect(database) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM web_sessions").fetchone()[0])


def test_a_thousand_cookieless_sign_in_forms_write_nothing(client: TestClient, database: Path) -> None:
    client.get("/login")  # the first read of the form secret, for a fair before
    before, rows = contents(database), session_rows(database)
    for _ in range(1000):
        client.cookies.clear()
        answer = client.get("/login")
        assert answer.status_code == 200 and COOKIE not in answer.cookies
    assert session_rows(database) == rows == 0
    assert contents(database) == before


def test_refused_attempts_write_nothing(client: TestClient, container, database: Path) -> None:
    issued = issue(container)
    token = form_token(client.get("/login").text)
    before = contents(database)
    assert client.post("/login", data={"csrf": "forged", "api_key": issued.secret}).status_code == 403
    token = form_token(client.get("/login").text)
    for _ in range(ATTEMPTS):
        assert client.post("/login", data={"csrf": token, "api_key": "fs_not-a-key"}).status_code == 401
    assert client.post("/login", data={"csrf": token, "api_key": issued.secret}).status_code == 429
    assert contents(database) == before and COOKIE not in client.cookies


def test_the_sign_in_flow_rotates_the_session_and_opens_the_pages(client: TestClient, container,
                                                                  database: Path) -> None:
    issued = issue(container)
    client.cookies.set(COOKIE, "planted-by-someone-else")  # a fixation attempt: worth nothing
    token = form_token(client.get("/login").text)
    held = client.cookies[FORM_COOKIE]
    answer = client.post("/login", data={"csrf": token, "api_key": issued.secret}, follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == "/"
    first = answer.cookies[COOKIE]
    assert first != "planted-by-someone-else" and session_rows(database) == 1
    assert FORM_COOKIE not in client.cookies  # the browser drops the form's token
    client.cookies.clear()
    client.cookies.set(COOKIE, first)
    assert client.get("/").status_code == 200 and client.get("/new").status_code == 200
    assert client.get("/login", follow_redirects=False).headers["location"] == "/"  # signed in already

    # Signing in again from the same browser (a form kept open) ends the session it held.
    client.cookies.set(FORM_COOKIE, held, path="/login")
    answer = client.post("/login", data={"csrf": token, "api_key": issued.secret}, follow_redirects=False)
    assert answer.status_code == 303 and answer.cookies[COOKIE] != first and session_rows(database) == 1
    client.cookies.clear()
    client.cookies.set(COOKIE, first)
    assert client.get("/", follow_redirects=False).headers["location"] == "/login"


def test_the_form_cookie_is_httponly_strict_short_lived_and_only_for_the_sign_in_path(app) -> None:
    for base, secure in ((BASE, True), ("http://testserver", False)):
        with TestClient(app, base_url=base) as client:
            cookie = client.get("/login").headers["set-cookie"]
            assert cookie.startswith(f"{FORM_COOKIE}=") and "HttpOnly" in cookie and "SameSite=strict" in cookie
            assert f"Max-Age={FORM_SECONDS}" in cookie and "Path=/login" in cookie
            assert ("Secure" in cookie) is secure


def test_a_missing_forged_foreign_or_expired_form_token_is_refused(app, client: TestClient, container,
                                                                  clock: Clock) -> None:
    issued = issue(container)
    token = form_token(client.get("/login").text)
    made_up = issue_form_token(b"a secret the server does not have" * 2, clock.now)
    expires, nonce, mac = token.split(".")
    refusals = {
        "no field": ({}, None),
        "no cookie": ({"csrf": token}, ""),
        "a made-up pair": ({"csrf": made_up}, made_up),
        "a longer life": ({"csrf": f"{int(expires) + FORM_SECONDS}.{nonce}.{mac}"},
                          f"{int(expires) + FORM_SECONDS}.{nonce}.{mac}"),
    }
    for case, (fields, held) in refusals.items():
        client.cookies.clear()
        client.cookies.set(FORM_COOKIE, token if held is None else held, path="/login")
        answer = client.post("/login", data={**fields, "api_key": issued.secret}, follow_redirects=False)
        assert answer.status_code == 403 and "form expired" in answer.text, case
        assert COOKIE not in answer.cookies and form_token(answer.text) != token, case  # a new form

    # Another browser's token, posted from a page of another site (which cannot set our cookie).
    with TestClient(app, base_url=BASE) as other:
        foreign = form_token(other.get("/login").text)
    client.cookies.clear()
    client.get("/login")
    answer = client.post("/login", data={"csrf": foreign, "api_key": issued.secret}, follow_redirects=False)
    assert answer.status_code == 403

    # A form left open past its hour.
    mine = form_token(client.get("/login").text)
    clock.now += FORM_SECONDS
    answer = client.post("/login", data={"csrf": mine, "api_key": issued.secret}, follow_redirects=False)
    assert answer.status_code == 403 and COOKIE not in answer.cookies
    answer = client.post("/login", data={"csrf": form_token(answer.text), "api_key": issued.secret},
                         follow_redirects=False)
    assert answer.status_code == 303  # the refusal's new form works


def test_a_second_tab_keeps_the_first_tabs_form_good(client: TestClient, container, clock: Clock) -> None:
    first = form_token(client.get("/login").text)
    clock.now += FORM_SECONDS / 2 - 1
    assert form_token(client.get("/login").text) == first
    clock.now += 2
    assert form_token(client.get("/login").text) != first  # less than half its hour left: a new one
    issued = issue(container)
    assert client.post("/login", data={"csrf": form_token(client.get("/login").text), "api_key": issued.secret},
                       follow_redirects=False).status_code == 303


def test_attempts_are_limited_per_client_address_with_retry_after(app, client: TestClient, container,
                                                                 clock: Clock) -> None:
    issued = issue(container)
    token = form_token(client.get("/login").text)
    for _ in range(ATTEMPTS):
        assert client.post("/login", data={"csrf": token, "api_key": "fs_not-a-key"}).status_code == 401
    limited = client.post("/login", data={"csrf": token, "api_key": issued.secret})  # a good key too
    assert limited.status_code == 429 and limited.headers["retry-after"] == str(60 // ATTEMPTS)
    assert f"Too many sign-in attempts: try again in {60 // ATTEMPTS} seconds." in limited.text
    assert COOKIE not in client.cookies

    with TestClient(app, base_url=BASE, client=("192.0.2.2", 50000)) as neighbour:
        sign_in_page = neighbour.get("/login")
        answer = neighbour.post("/login", data={"csrf": form_token(sign_in_page.text), "api_key": issued.secret},
                                follow_redirects=False)
        assert answer.status_code == 303 and neighbour.get("/").status_code == 200

    clock.now += 60 // ATTEMPTS  # one attempt's worth
    answer = client.post("/login", data={"csrf": token, "api_key": issued.secret}, follow_redirects=False)
    assert answer.status_code == 303
    with TestClient(app, base_url=BASE, client=("192.0.2.1", 50001)) as same_address:
        answer = same_address.post("/login", data={"csrf": form_token(same_address.get("/login").text),
                                                   "api_key": issued.secret}, follow_redirects=False)
        assert answer.status_code == 429


def test_one_ipv6_network_is_one_client(app, client: TestClient) -> None:
    token = form_token(client.get("/login").text)
    held = client.cookies[FORM_COOKIE]
    answers = []
    for host in ("2001:db8::1", "2001:db8::2", "2001:db8::3", "2001:db8::4", "2001:db8:0:1::1"):
        with TestClient(app, base_url=BASE, client=(host, 50000)) as neighbour:
            neighbour.cookies.set(FORM_COOKIE, held, path="/login")
            answers.append(neighbour.post("/login", data={"csrf": token, "api_key": "fs_not-a-key"}).status_code)
    assert answers == [401, 401, 401, 429, 401]  # the fourth address of one /64; the next /64 is another client

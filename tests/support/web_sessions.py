"""Signing in to the web app from a TestClient, and the tokens its pages carry."""

from __future__ import annotations

import re

import anyio
from starlette.testclient import TestClient

from firmsift.domain.keys import IssuedKey
from firmsift.services.keys import create_key

CSV_UPLOAD = b"Company,Website\r\nAcme,https://www.acme.com/about\r\nBlank,\r\nBeta,beta.org\r\n"


def issue(container, name: str = "team") -> IssuedKey:  # noqa: ANN001
    return anyio.run(lambda: create_key(name, (), container.api_keys()))


def form_token(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)  # type: ignore[union-attr]


def page_token(html: str) -> str:
    return re.search(r'name="csrf-token" content="([^"]+)"', html).group(1)  # type: ignore[union-attr]


def sign_in(client: TestClient, issued: IssuedKey) -> str:
    """Signs in; the CSRF token of the signed-in session."""
    token = form_token(client.get("/login").text)
    answer = client.post("/login", data={"csrf": token, "api_key": issued.secret}, follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == "/", answer.text
    return page_token(client.get("/").text)


def submit_csv(client: TestClient, token: str, body: bytes = CSV_UPLOAD) -> str:
    answer = client.post("/new/submit?kind=csv&classifier=cpg&column=Website", content=body,
                         headers={"content-type": "text/csv", "x-csrf-token": token})
    assert answer.status_code == 201, answer.text
    return answer.json()["batch_id"]

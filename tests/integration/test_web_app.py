"""The web app's security on the real app and a SQLite file: sign-in exchanges a key for a session
(new id at sign-in, cookie flags), CSRF on every form and script request, another key's batch is
not found, CSP and frame headers on every page, and every value from the web or a model is escaped."""

from __future__ import annotations

import re

import anyio
import pytest
from starlette.testclient import TestClient

from firmsift.domain.clock import utc_now
from firmsift.domain.model import Answer, DomainResult, Evidence, QuoteStatus, ResultStatus, Source
from firmsift.entrypoints.web.security import CONTENT_SECURITY_POLICY
from firmsift.entrypoints.web.site import COOKIE
from firmsift.services.keys import revoke_key
from tests.support.web_sessions import CSV_UPLOAD, form_token, issue, page_token, sign_in, submit_csv


pytestmark = [pytest.mark.container(auth="required", rate_limit_per_minute=0),
              pytest.mark.client(base_url="https://testserver")]


def test_every_page_needs_a_signed_in_session(client: TestClient) -> None:
    for path in ("/", "/new", "/batch/0d0a6a2e-0000-4000-8000-000000000000", "/batch/x/export.csv", "/human-answers",
                 "/human-answers/export.csv"):
        answer = client.get(path, follow_redirects=False)
        assert answer.status_code == 303 and answer.headers["location"] == "/login", path
    assert client.post("/new/check?kind=list", content=b"a.com", follow_redirects=False).status_code == 303
    for path in ("/batch/x/correct", "/human-answers/undo"):
        assert client.post(path, data={"csrf": "x"}, follow_redirects=False).headers["location"] == "/login", path


def test_the_session_cookie_is_httponly_strict_and_secure_over_tls(container) -> None:
    issued = issue(container)
    for base, secure in (("https://testserver", True), ("http://testserver", False)):
        with TestClient(container.api(), base_url=base) as client:
            form = client.get("/login")
            assert COOKIE not in form.cookies  # no session before a sign-in
            answer = client.post("/login", data={"csrf": form_token(form.text), "api_key": issued.secret},
                                 follow_redirects=False)
            [cookie] = [c for c in answer.headers.get_list("set-cookie") if c.startswith(f"{COOKIE}=")]
            assert "HttpOnly" in cookie and "SameSite=strict" in cookie
            assert ("Secure" in cookie) is secure
            assert "Max-Age" not in cookie and "Expires" not in cookie  # ends with the browser session


def test_signing_in_starts_a_new_session_and_the_key_never_reaches_the_browser(client: TestClient, container) -> None:
    issued = issue(container)
    before = "an-id-planted-in-the-browser-by-someone-else"
    client.cookies.set(COOKIE, before)
    login = client.get("/login")
    answer = client.post("/login", data={"csrf": form_token(login.text), "api_key": issued.secret}, follow_redirects=False)
    after = answer.cookies[COOKIE]
    assert after != before  # no fixation: a session id planted before sign-in is worth nothing after
    assert issued.secret not in answer.headers.get("set-cookie", "") and issued.secret not in answer.text
    client.cookies.clear()
    client.cookies.set(COOKIE, after)
    home = client.get("/")
    assert home.status_code == 200 and issued.secret not in home.text
    # The pre-sign-in id no longer opens anything.
    client.cookies.clear()
    client.cookies.set(COOKIE, before)
    assert client.get("/", follow_redirects=False).status_code == 303


def test_a_wrong_key_is_refused_without_a_session(client: TestClient, container) -> None:
    login = client.get("/login")
    answer = client.post("/login", data={"csrf": form_token(login.text), "api_key": "fs_not-a-key"})
    assert answer.status_code == 401 and "not valid" in answer.text
    assert client.get("/", follow_redirects=False).status_code == 303


def test_csrf_tokens_are_required_on_every_form_and_script_request(client: TestClient, container) -> None:
    issued = issue(container)
    login = client.get("/login")
    refused = client.post("/login", data={"api_key": issued.secret}, follow_redirects=False)
    assert refused.status_code == 403
    refused = client.post("/login", data={"csrf": "forged", "api_key": issued.secret}, follow_redirects=False)
    assert refused.status_code == 403 and form_token(login.text) not in refused.text  # a fresh token
    token = sign_in(client, issued)
    for headers in ({}, {"x-csrf-token": "forged"}, {"x-csrf-token": ""}):
        for path in ("/new/check?kind=list", "/new/submit?kind=list"):
            answer = client.post(path, content=b"a.com\n", headers={"content-type": "text/plain", **headers})
            assert answer.status_code == 403, (path, headers)
    assert client.post("/logout", data={"csrf": "forged"}, follow_redirects=False).status_code == 403
    assert client.get("/").status_code == 200  # still signed in
    assert client.post("/new/check?kind=list", content=b"a.com\n",
                       headers={"content-type": "text/plain", "x-csrf-token": token}).status_code == 200


def test_signing_out_ends_the_session(client: TestClient, container) -> None:
    token = sign_in(client, issue(container))
    kept = client.cookies[COOKIE]
    answer = client.post("/logout", data={"csrf": token}, follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == "/login"
    client.cookies.clear()
    client.cookies.set(COOKIE, kept)  # a copy of the cookie kept from before
    assert client.get("/", follow_redirects=False).status_code == 303


def test_a_revoked_key_ends_its_sessions(client: TestClient, container) -> None:
    issued = issue(container)
    sign_in(client, issued)
    anyio.run(lambda: revoke_key(issued.record.id, container.api_keys()))
    assert client.get("/", follow_redirects=False).headers["location"] == "/login"


def test_another_keys_batch_is_not_found(container) -> None:
    with TestClient(container.api(), base_url="https://testserver") as owner, \
            TestClient(container.api(), base_url="https://testserver") as stranger:
        batch_id = submit_csv(owner, sign_in(owner, issue(container, "owner")))
        sign_in(stranger, issue(container, "stranger"))
        for suffix in ("", "/rows", "/review", "/export.csv", "/export.jsonl"):
            assert owner.get(f"/batch/{batch_id}{suffix}").status_code == 200, suffix
            answer = stranger.get(f"/batch/{batch_id}{suffix}")
            assert answer.status_code == 404 and batch_id not in answer.text.replace(f"/batch/{batch_id}", ""), suffix
        assert batch_id in owner.get("/").text and batch_id not in stranger.get("/").text


def test_every_page_has_a_strict_policy_and_refuses_frames(client: TestClient, container) -> None:
    assert "'unsafe-inline'" not in CONTENT_SECURITY_POLICY and "default-src 'self'" in CONTENT_SECURITY_POLICY
    pages = ["/login", "/static/app.js", "/static/app.css"]
    answers = [client.get(path) for path in pages]
    batch_id = submit_csv(client, sign_in(client, issue(container)))
    for path in ("/", "/new", f"/batch/{batch_id}", f"/batch/{batch_id}/review", f"/batch/{batch_id}/rows",
                 f"/batch/{batch_id}/export.csv", "/batch/not-a-batch", f"/batch/{batch_id}/export.xls", "/batches",
                 "/human-answers", "/human-answers/export.csv"):
        pages.append(path)
        answers.append(client.get(path))
    for path, answer in zip(pages, answers):
        assert answer.headers["content-security-policy"] == CONTENT_SECURITY_POLICY, path
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
        assert answer.headers["x-frame-options"] == "DENY" and answer.headers["x-content-type-options"] == "nosniff"
        if answer.headers["content-type"].startswith("text/html"):
            assert "<script>" not in answer.text and " style=" not in answer.text and " on" not in re.sub(
                r">[^<]*<", "><", answer.text).replace(" one", ""), path  # no inline script, style or handler


def test_values_from_the_web_and_models_render_as_text(client: TestClient, container) -> None:
    batch_id = submit_csv(client, sign_in(client, issue(container)))
    row = anyio.run(lambda: container.batches().result_page(batch_id, after=-1, limit=1))[0].row
    answer = Answer(domain="acme.com", classifier="cpg", status=ResultStatus.DONE, answered_at=utc_now(),
                    source=Source.LLM, answer=False, confidence=2, reason="Sells <script>alert(1)</script> snacks",
                    evidence=(Evidence("https://acme.com/a?x=\"><b>", "<img src=x onerror=alert(1)>"),
                              Evidence("javascript:alert(3)", "click me")),
                    quote="<b>bold</b>", quote_status=QuoteStatus.UNVERIFIED)
    assert row.job_id is not None
    anyio.run(lambda: container.store().save_result(row.job_id, DomainResult.from_answer(answer, Source.LLM), answer))
    for path in (f"/batch/{batch_id}", f"/batch/{batch_id}/review"):
        html = client.get(path).text
        assert "&lt;img src=x onerror=alert(1)&gt;" in html and "<img" not in html, path
        assert "Sells &lt;script&gt;alert(1)&lt;/script&gt; snacks" in html and "<script>" not in html, path
        assert "&lt;b&gt;bold&lt;/b&gt;" in html and 'href="javascript:' not in html, path
        assert 'rel="noopener noreferrer nofollow"' in html, path
    fragment = client.get(f"/batch/{batch_id}/rows").json()["rows_html"]
    assert "&lt;img src=x onerror=alert(1)&gt;" in fragment and "<img" not in fragment
    review = client.get(f"/batch/{batch_id}/review").text
    assert "low confidence (2)" in review and "quote not found in the evidence" in review


def test_with_authentication_off_there_is_no_sign_in(make_container) -> None:
    container = make_container(auth="off")
    with TestClient(container.api()) as client:
        assert client.get("/login", follow_redirects=False).headers["location"] == "/"
        home = client.get("/")
        assert home.status_code == 200 and "Sign out" not in home.text and "Sign in" not in home.text
        batch_id = submit_csv(client, page_token(home.text))
        assert batch_id in client.get("/").text
        assert client.post("/new/submit?kind=list", content=b"a.com",
                           headers={"content-type": "text/plain"}).status_code == 403  # CSRF still required


def test_the_form_previews_estimates_and_submits_through_the_batch_services(client: TestClient, container) -> None:
    token = sign_in(client, issue(container))
    headers = {"x-csrf-token": token}
    checked = client.post("/new/check?kind=csv&classifier=cpg", content=CSV_UPLOAD,
                          headers={**headers, "content-type": "text/csv"}).json()
    assert checked["columns"] == ["Company", "Website"] and checked["column"] == "Website"  # guessed as the CLI does
    assert [(p["line"], p["domain"], p["rejection"]) for p in checked["preview"]] == [
        (2, "acme.com", None), (3, None, "blank cell"), (4, "beta.org", None)]
    assert checked["rejected"] == [{"index": 1, "line": 3, "reason": "blank cell"}]
    assert (checked["estimate"]["accepted"], checked["estimate"]["to_ask"]) == (2, 2)
    other = client.post("/new/check?kind=csv&column=Company", content=CSV_UPLOAD,
                        headers={**headers, "content-type": "text/csv"}).json()
    assert other["column"] == "Company" and other["estimate"]["accepted"] == 0
    missing = client.post("/new/check?kind=csv&column=Site", content=CSV_UPLOAD,
                          headers={**headers, "content-type": "text/csv"})
    assert missing.status_code == 400 and "Company" in missing.json()["error"]["message"]
    pasted = client.post("/new/check?kind=list", content=b"a.com\n\n  b.com \nnot a domain\n",
                         headers={**headers, "content-type": "text/plain"}).json()
    assert [p["value"] for p in pasted["preview"]] == ["a.com", "b.com", "not a domain"]
    assert pasted["estimate"]["accepted"] == 2 and len(pasted["rejected"]) == 1
    for body in (b"", b"\n \n"):
        refused = client.post("/new/check?kind=list", content=body, headers={**headers, "content-type": "text/plain"})
        assert refused.status_code in (400, 422), body
    assert client.post("/new/check?kind=xls", content=b"a.com",
                       headers={**headers, "content-type": "text/plain"}).status_code == 400
    made = client.post("/new/submit?kind=list&classifier=cpg", content=b"a.com\nb.com\na.com\n",
                       headers={**headers, "content-type": "text/plain"})
    batch = client.get(f"/batches/{made.json()['batch_id']}", headers={"x-api-key": "none"})
    assert made.status_code == 201 and batch.status_code == 401  # the API itself still wants the key
    stored = anyio.run(lambda: container.batches().get_batch(made.json()["batch_id"]))
    assert (stored.total, stored.accepted, stored.duplicates) == (3, 2, 1)
    refused = client.post("/new/submit?kind=list&classifier=nope", content=b"a.com",
                          headers={**headers, "content-type": "text/plain"})
    assert refused.status_code == 422


def test_the_batch_page_cancels_and_retries_with_its_buttons(client: TestClient, container) -> None:
    import json

    from firmsift.domain.model import JobStatus

    token = sign_in(client, issue(container))
    batch_id = submit_csv(client, token)
    page = client.get(f"/batch/{batch_id}").text
    assert f'action="/batch/{batch_id}/cancel"' in page and "/retry" not in page  # pending, none failed
    forged = client.post(f"/batch/{batch_id}/cancel", data={"csrf": "forged"}, follow_redirects=False)
    assert forged.status_code == 403

    # One job fails as a whole (its worker gave up), then the button queues it again.
    [message] = anyio.run(lambda: container.work_queue().receive(max_messages=10))
    job_id = json.loads(message.body)["job_id"]
    anyio.run(lambda: container.store().set_job_status(job_id, JobStatus.FAILED, "gave up"))
    page = client.get(f"/batch/{batch_id}").text
    assert "Retry 2 failed rows" in page
    retried = client.post(f"/batch/{batch_id}/retry", data={"csrf": token}, follow_redirects=True)
    assert retried.status_code == 200
    assert '<p class="notice" role="status">Queued 1 job(s) with failed rows again; answered rows are kept.</p>' \
        in retried.text
    assert anyio.run(lambda: container.store().get_job(job_id)).status is JobStatus.PENDING  # queued again

    cancelled = client.post(f"/batch/{batch_id}/cancel", data={"csrf": token}, follow_redirects=True)
    assert "Cancelled 1 job(s) that had not started" in cancelled.text
    assert "/retry" not in cancelled.text and "/cancel" not in cancelled.text  # a cancelled batch has no buttons

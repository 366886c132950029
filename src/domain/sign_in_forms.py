"""The sign-in form's CSRF token, stored by no one: an expiry and a random nonce, signed with the
deployment's secret (HMAC-SHA256). The browser holds it twice, in a cookie and in the form (a
double submit), so showing the form writes nothing and any API process can check what comes back."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

FORM_SECONDS = 3600  # a sign-in form is good for an hour
MAX_TOKEN_CHARS = 128  # ours are 77; anything longer is not worth a MAC


def issue_form_token(secret: bytes, now: float) -> str:
    """A new token, good for FORM_SECONDS from `now` (epoch seconds)."""
    body = f"{int(now) + FORM_SECONDS}.{secrets.token_urlsafe(16)}"
    return f"{body}.{_mac(secret, body)}"


def seconds_left(secret: bytes, token: str | None, now: float) -> float:
    """How long `token` stays good: 0 when it is missing, malformed, expired or not signed with `secret`."""
    if not token or len(token) > MAX_TOKEN_CHARS:
        return 0.0
    body, _, mac = token.rpartition(".")
    expires, _, nonce = body.partition(".")
    if not (expires.isascii() and expires.isdigit() and nonce):
        return 0.0
    if not hmac.compare_digest(mac.encode(), _mac(secret, body).encode()):
        return 0.0
    return max(0.0, int(expires) - now)


def form_presented(secret: bytes, held: str | None, presented: str | None, now: float) -> bool:
    """Whether a sign-in form carries the token its browser holds (a page on another site can
    make the browser post a form, but cannot read or set our cookie), and that token is ours and live."""
    if not held or not presented or not hmac.compare_digest(held.encode(), presented.encode()):
        return False
    return seconds_left(secret, held, now) > 0


def _mac(secret: bytes, body: str) -> str:
    digest = hmac.new(secret, body.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()

"""The firmsift HTTP API as a JobsApi over httpx: what `firmsift classify` submits to and polls."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx

from firmsift.adapters.web.retry_after import retry_after_seconds
from firmsift.ports.jobs_api import ClientError

MAX_RETRY_AFTER = 60.0  # the longest Retry-After the client waits out before its next attempt
MAX_RETRY_DELAY = 30.0  # the retry delay doubles after each failed attempt, up to this


class HttpJobsApi:
    """The two calls of the API the client needs, with retries on overload and dropped connections:
    `attempts` in all, the first retry after `retry_delay` seconds, each next one after twice as
    long (at most MAX_RETRY_DELAY; longer if the API's Retry-After asks, up to MAX_RETRY_AFTER)."""

    def __init__(self, client: httpx.Client, classifier: str, attempts: int = 6, retry_delay: float = 1.0,
                 on_unreachable: Callable[[str], None] = lambda message: None) -> None:
        self.client, self.classifier, self.attempts, self.retry_delay = client, classifier, attempts, retry_delay
        # Told once, at the first failed connection, so a wrong or forgotten --api is not half a minute of silence.
        self.on_unreachable = on_unreachable
        self._told_unreachable = False

    def submit(self, domains: list[str]) -> tuple[str | None, dict[str, str]]:
        """(job id, {domain: reason} of the domains the API refused); the rest are resubmitted."""
        refused: dict[str, str] = {}
        while domains:
            response = self._request("POST", "/domains/classify", json={"classifier": self.classifier,
                                                                        "domains": domains})
            if response.status_code == 202:
                return str(response.json()["job_id"]), refused
            error = error_body(response)
            details = error.get("details") or []
            if response.status_code == 422 and error.get("code") == "invalid_domains" and details:
                bad = {d: _reason(d, details) for d in domains if _reason(d, details) is not None}
                if not bad:
                    raise ClientError(f"API rejected domains it did not identify: {error.get('message')}")
                refused.update({d: r for d, r in bad.items() if r is not None})
                domains = [d for d in domains if d not in bad]
                continue
            if response.status_code == 413 and error.get("code") == "too_many_domains" and details:
                limit = max(len(domains) - len(details), 1)
                raise ClientError(f"the API takes at most {limit} domains a job: pass --batch-size {limit}")
            raise ClientError(f"API refused the job ({response.status_code}): "
                              f"{error.get('message', response.text[:200])}")
        return None, refused

    def job(self, job_id: str) -> dict[str, Any]:
        response = self._request("GET", f"/domains/classify/{job_id}")
        if response.status_code != 200:
            raise ClientError(f"polling job {job_id} failed ({response.status_code}): {response.text[:200]}")
        return dict(response.json())

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        for attempt in range(self.attempts):
            last = attempt == self.attempts - 1
            wait = min(self.retry_delay * 2.0**attempt, MAX_RETRY_DELAY)
            try:
                response = self.client.request(method, path, **kwargs)
            except httpx.TransportError as error:
                if last:
                    raise ClientError(f"cannot reach the API at {self.client.base_url}: {error}") from None
                if not self._told_unreachable:
                    self._told_unreachable = True
                    total = sum(min(self.retry_delay * 2.0**n, MAX_RETRY_DELAY) for n in range(self.attempts - 1))
                    self.on_unreachable(f"cannot reach the API at {self.client.base_url} ({error}); trying again for "
                                        f"up to {total:.0f}s (is `firmsift serve` running there? --api names another)")
            else:
                if response.status_code == 401:
                    raise ClientError(f"the API at {self.client.base_url} requires an API key: pass --api-key KEY or "
                                      "set FIRMSIFT_API_KEY (an operator creates one with `firmsift keys create "
                                      "--name NAME`)")
                if response.status_code not in (429, 502, 503, 504) or last:
                    return response
                wait = max(wait, min(retry_after_seconds(response.headers) or 0.0, MAX_RETRY_AFTER))
            time.sleep(wait)
        raise AssertionError("unreachable")


def _reason(sent: str, details: list[dict[str, Any]]) -> str | None:
    """The API echoes long values cut short and marked with an ellipsis."""
    for item in details:
        echoed = item.get("value")
        if isinstance(echoed, str) and (sent == echoed or (echoed.endswith("…") and sent.startswith(echoed[:-1]))):
            return str(item.get("reason"))
    return None


def error_body(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}

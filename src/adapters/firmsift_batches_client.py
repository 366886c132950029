"""The firmsift API's batch routes as `firmsift classify --csv` uses them: submit a list of domains as a
batch, follow its progress, stream its result lines from a given row."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from firmsift.adapters.firmsift_api_client import HttpJobsApi, error_body
from firmsift.ports.jobs_api import BatchRefused, BatchesMissing, ClientError


@contextlib.contextmanager
def classify_api(base_url: str, classifier: str, *, api_key: str | None, retry_delay: float = 1.0,
                 on_unreachable: Callable[[str], None] = lambda message: None) -> Iterator[HttpBatchesApi]:
    """The API at `base_url`, asked with `classifier` and the caller's key (if any), for the
    length of the block: its jobs and its batches; a failed request is tried again after
    `retry_delay` seconds, doubling (`on_unreachable` is told at the first failed connection)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    with httpx.Client(base_url=base_url, timeout=30, headers=headers) as http:
        yield HttpBatchesApi(http, classifier, retry_delay=retry_delay, on_unreachable=on_unreachable)


class HttpBatchesApi(HttpJobsApi):
    """The job calls, and the batch calls with the same retries on overload and dropped connections."""

    def submit_batch(self, domains: list[str], idempotency_key: str) -> str:
        """The batch id. BatchesMissing when the API has no /batches, BatchRefused on 413 (too many
        domains or too large a body), ClientError otherwise. The key makes a repeat return the same batch."""
        response = self._request("POST", "/batches", json={"classifier": self.classifier, "domains": domains},
                                 headers={"Idempotency-Key": idempotency_key})
        if response.status_code == 202:
            return str(response.json()["batch_id"])
        error = error_body(response)
        if response.status_code == 404 and error.get("code") in (None, "not_found"):
            raise BatchesMissing(f"{self.client.base_url} has no /batches")
        if response.status_code == 413:
            raise BatchRefused(str(error.get("message") or "too large"))
        raise ClientError(f"API refused the batch ({response.status_code}): {error.get('message', response.text[:200])}")

    def batch(self, batch_id: str) -> dict[str, Any]:
        response = self._request("GET", f"/batches/{batch_id}")
        if response.status_code != 200:
            raise ClientError(f"following batch {batch_id} failed ({response.status_code}): {response.text[:200]}")
        return dict(response.json())

    def batch_results(self, batch_id: str, start: int) -> Iterator[dict[str, Any]]:
        """The result lines of the batch from row index `start`, as they arrive. ClientError when the
        stream breaks: the caller resumes from the rows it has."""
        try:
            with self.client.stream("GET", f"/batches/{batch_id}/results",
                                    params={"format": "jsonl", "start": start}, timeout=120) as response:
                if response.status_code != 200:
                    response.read()
                    raise ClientError(f"downloading batch {batch_id} failed ({response.status_code}): "
                                      f"{response.text[:200]}")
                for line in response.iter_lines():
                    if line.strip():
                        yield dict(json.loads(line))
        except httpx.TransportError as error:
            raise ClientError(f"the download of batch {batch_id} broke off: {error}") from None
        except json.JSONDecodeError:
            raise ClientError(f"the download of batch {batch_id} broke off in the middle of a line") from None

"""POST /batches?dry_run=true as `firmsift classify --estimate` asks it: a CSV body, the estimate back."""

from __future__ import annotations

from typing import Any

import httpx

from firmsift.ports.jobs_api import BatchRefused, ClientError


def estimate_batch(base_url: str, *, classifier: str, column: str, csv_body: bytes, api_key: str | None,
                   timeout: float = 120.0) -> dict[str, Any]:
    """The API's dry run of a batch of the CSV `csv_body` (UTF-8, comma-separated) read from
    `column`. Raises ClientError when the API cannot be reached or refuses the request."""
    headers = {"content-type": "text/csv", **({"Authorization": f"Bearer {api_key}"} if api_key else {})}
    try:
        response = httpx.post(f"{base_url.rstrip('/')}/batches", params={"dry_run": "true", "classifier": classifier,
                                                                         "column": column},
                              content=csv_body, headers=headers, timeout=timeout)
    except httpx.TransportError as error:
        raise ClientError(f"cannot reach the API at {base_url}: {error}") from None
    if response.status_code == 413:
        raise BatchRefused(f"API refused the estimate as too large: {_message(response)}")
    if response.status_code != 200:
        raise ClientError(f"API refused the estimate ({response.status_code}): {_message(response)}")
    return dict(response.json())


def _message(response: httpx.Response) -> str:
    try:
        error = response.json().get("error", {})
    except (ValueError, AttributeError):
        return response.text[:200]
    return str(error.get("message", response.text[:200])) if isinstance(error, dict) else response.text[:200]

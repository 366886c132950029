"""What `firmsift classify` is given: another firmsift service's API, through the HTTP clients
chosen here. Imports no container: classify never loads the service's own wiring."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from firmsift.adapters.firmsift_batches_client import classify_api
from firmsift.adapters.firmsift_estimate_client import estimate_batch
from firmsift.ports.jobs_api import BatchesApi


@dataclass(frozen=True)
class RemoteFirmsift:
    """The firmsift API at `base_url`, asked with the caller's key (if any)."""

    base_url: str
    api_key: str | None

    @contextlib.contextmanager
    def batches(self, classifier: str, *, retry_delay: float,
                on_unreachable: Callable[[str], None]) -> Iterator[BatchesApi]:
        """Its jobs and batches for the length of the block, asked with `classifier`; a failed
        request is tried again after `retry_delay` seconds, doubling (`on_unreachable` is told at
        the first failed connection). Raises ClientError."""
        with classify_api(self.base_url, classifier, api_key=self.api_key, retry_delay=retry_delay,
                          on_unreachable=on_unreachable) as api:
            yield api

    def estimate(self, *, classifier: str, column: str, csv_body: bytes) -> dict[str, Any]:
        """Its dry run of a batch of the CSV `csv_body` read from `column`. Raises ClientError."""
        return estimate_batch(self.base_url, classifier=classifier, column=column, csv_body=csv_body,
                              api_key=self.api_key)

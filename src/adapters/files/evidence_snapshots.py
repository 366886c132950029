"""Evidence snapshots on disk: one JSON Lines file per search provider (or chain of them, named
like `homepage,searxng`), and `_precheck.jsonl` for the pre-check's site statuses (the leading
underscore is in no provider's name); the latest line per domain wins."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from firmsift.adapters.files.jsonl import JsonlFileError, append_record, read_records
from firmsift.domain.evaluation import GatheredEvidence
from firmsift.domain.model import Evidence
from firmsift.domain.site_status import SiteStatus, SiteVerdict

_PROVIDER = re.compile(r"^[a-z][a-z0-9_,-]{0,59}$")  # a provider's name, or a chain's: names and commas
SITE_STATUS_FILE = "_precheck.jsonl"


class SnapshotFiles:
    """`<folder>/<provider>.jsonl`. Recorded web text is untrusted: it is read back as plain
    strings and fenced into the prompt like live evidence, never interpreted."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def load(self, provider: str) -> dict[str, GatheredEvidence]:
        path = self._path(provider)
        recorded: dict[str, GatheredEvidence] = {}
        for record in read_records(path):
            try:
                recorded[_text(record, "domain")] = GatheredEvidence(
                    evidence=tuple(Evidence(_text(e, "url"), _text(e, "title"), _text(e, "snippet"))
                                   for e in _list(record, "evidence")),
                    seconds=float(record.get("seconds", 0.0)),
                    error=record.get("error") if isinstance(record.get("error"), str) else None,
                )
            except (TypeError, ValueError) as error:
                raise JsonlFileError(f"{path}: a record is malformed: {error}") from None
        return recorded

    def save(self, provider: str, domain: str, gathered: GatheredEvidence) -> None:
        append_record(self._path(provider), {
            "domain": domain,
            "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "seconds": round(gathered.seconds, 6),
            "error": gathered.error,
            "evidence": [{"url": e.url, "title": e.title, "snippet": e.snippet} for e in gathered.evidence],
        })

    def load_site_statuses(self) -> dict[str, SiteVerdict]:
        """No file (snapshots recorded before the pre-check, or with it off): no domain pre-checked."""
        path = self.folder / SITE_STATUS_FILE
        recorded: dict[str, SiteVerdict] = {}
        for record in read_records(path):
            try:
                target = record.get("redirected_to")
                if target is not None and not isinstance(target, str):
                    raise TypeError("redirected_to must be text")
                recorded[_text(record, "domain")] = SiteVerdict(SiteStatus(_text(record, "site_status")),
                                                                _text(record, "reason"), target)
            except (TypeError, ValueError) as error:
                raise JsonlFileError(f"{path}: a record is malformed: {error}") from None
        return recorded

    def save_site_status(self, domain: str, verdict: SiteVerdict) -> None:
        append_record(self.folder / SITE_STATUS_FILE, {
            "domain": domain,
            "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "site_status": verdict.status.value,
            "reason": verdict.reason,
            "redirected_to": verdict.redirected_to,
        })

    def _path(self, provider: str) -> Path:
        if not _PROVIDER.match(provider):  # the name becomes a file name
            raise ValueError(f"search provider name {provider!r} cannot name a snapshot file")
        return self.folder / f"{provider}.jsonl"


def _text(record: Any, key: str) -> str:
    value = record.get(key, "") if isinstance(record, dict) else None
    if not isinstance(value, str):
        raise TypeError(f"{key} must be text")
    return value


def _list(record: dict[str, Any], key: str) -> list[Any]:
    value = record.get(key, [])
    if not isinstance(value, list):
        raise TypeError(f"{key} must be a list")
    return value

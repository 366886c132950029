"""The time the domain records (job creation, answers, key revocation): timezone-aware UTC."""

from __future__ import annotations

from datetime import datetime, timezone


def utc_now() -> datetime:
    return datetime.now(timezone.utc)

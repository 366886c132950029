"""Idempotency-Key: a caller's retry of a submission gets the job the first attempt created."""

from __future__ import annotations

from firmsift.domain.errors import FirmsiftError, InvalidRequest, Rejection
from firmsift.domain.model import Job

MAX_KEY_LENGTH = 200


class IdempotencyKeyTaken(FirmsiftError):
    """Raised by a repository asked to store a job whose owner already has a job with the same
    Idempotency-Key; carries that earlier job. The unique index on (owner, idempotency_key)
    decides, so of two concurrent submissions exactly one creates a job."""

    code = "idempotency_key_taken"

    def __init__(self, existing: Job) -> None:
        super().__init__(f"idempotency key already used by job {existing.id}")
        self.existing = existing


class IdempotencyKeyReused(FirmsiftError):
    """The same Idempotency-Key came with a different request than the one that created its job."""

    code = "idempotency_key_reused"

    def __init__(self, key: str, job_id: str) -> None:
        super().__init__(f"Idempotency-Key {key!r} was already used for a different request (job {job_id}); "
                         "use a new key for a new request")
        self.key = key
        self.job_id = job_id


def check_idempotency_key(value: str | None) -> str | None:
    """The key as given, or InvalidRequest: 1-200 printable ASCII characters, no surrounding spaces."""
    if value is None:
        return None
    if 0 < len(value) <= MAX_KEY_LENGTH and value == value.strip(" ") and all(" " <= c <= "~" for c in value):
        return value
    raise InvalidRequest(
        "invalid Idempotency-Key",
        (Rejection(value=value, reason=f"must be 1-{MAX_KEY_LENGTH} printable ASCII characters "
                                       "without leading or trailing spaces"),),
    )


def replay(candidate: Job, existing: Job) -> Job:
    """The earlier job, if `candidate` asks for the same thing (after normalization: classifier,
    domains in order, reply queue); else IdempotencyKeyReused. The stored job is the normalized
    request, so comparing with it is exact and needs no separate request hash."""
    same = (candidate.classifier, candidate.domains, candidate.reply_queue) == (
        existing.classifier, existing.domains, existing.reply_queue)
    if not same:
        raise IdempotencyKeyReused(candidate.idempotency_key or "", existing.id)
    return existing

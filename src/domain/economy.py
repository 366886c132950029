"""Economy mode: questions that wait for the provider's batch API (half the price, answers within
24 h) instead of being asked at once, and the lines of its request and result files."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import Any

from firmsift.domain.errors import InvalidRequest
from firmsift.domain.model import Answer, Completion

MAX_REQUESTS_PER_PROVIDER_BATCH = 50_000  # OpenAI's limit on the lines of one batch's input file
MAX_PROVIDER_ATTEMPTS = 3  # provider batches a question may go out in before its domain fails
QUEUE_FULL_CODE = "token_limit_exceeded"  # OpenAI's error of a batch over the enqueued-token limit


class BatchMode(str, enum.Enum):
    """How a batch's domains that need the LLM are asked."""

    STANDARD = "standard"  # at once, at the normal price
    ECONOMY = "economy"  # through the provider's batch API: half the price, within 24 hours


def batch_mode(value: object) -> BatchMode:
    """The mode a caller named; InvalidRequest naming the choices otherwise."""
    try:
        return BatchMode(value)
    except ValueError:
        choices = ", ".join(mode.value for mode in BatchMode)
        raise InvalidRequest(f"'mode' must be one of {choices}, not {value!r}") from None


class ProviderBatchStatus(str, enum.Enum):
    """A provider batch's status as the provider reports it (OpenAI's batch object), plus ours
    before the provider knows of it."""

    PREPARING = "preparing"  # recorded by us; the input file may or may not be uploaded yet
    VALIDATING = "validating"
    FAILED = "failed"
    IN_PROGRESS = "in_progress"
    FINALIZING = "finalizing"
    COMPLETED = "completed"
    EXPIRED = "expired"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"

    @property
    def ended(self) -> bool:
        """No more answers will come: read what there is, and ask again for what is missing."""
        return self in (ProviderBatchStatus.FAILED, ProviderBatchStatus.COMPLETED,
                        ProviderBatchStatus.EXPIRED, ProviderBatchStatus.CANCELLED)


@dataclass(frozen=True)
class Deferral:
    """How an economy job's questions wait for the provider's batch API. `refresh`: its domains
    have cached answers that are asked again all the same (`firmsift refresh`)."""

    refresh: bool = False


@dataclass(frozen=True)
class Question:
    """One question to the LLM, as built for a domain: the prompt, the schema of the answer, the
    evidence sent (as made storable) and the marker that fenced it in the prompt."""

    system: str
    user: str
    json_schema: dict[str, Any]
    marker: str


@dataclass(frozen=True)
class DeferredQuestion:
    """A question waiting for the provider's batch API, keyed by (domain, classifier) so that two
    jobs never pay for it twice. `template` is the answer as known before asking (its evidence,
    how it was found, the pre-check's findings); the provider's answer is read into it."""

    question: Question
    template: Answer
    attempts: int = 0  # provider batches it went out in that ended without its answer

    @property
    def custom_id(self) -> str:
        """The line's id in the provider's files: unique within a provider batch."""
        return request_id(self.template.domain, self.template.classifier)


def request_id(domain: str, classifier: str) -> str:
    return f"{classifier}/{domain}"


@dataclass(frozen=True)
class ProviderBatch:
    """One provider batch as we track it: recorded before each step towards the provider, so a
    restart resumes it (polling, or looking it up by `id` in the provider's batch metadata)
    instead of submitting the same questions twice."""

    id: str  # ours, sent as the batch's metadata
    status: ProviderBatchStatus
    input_file_id: str | None = None
    batch_id: str | None = None  # the provider's
    output_file_id: str | None = None
    error_file_id: str | None = None
    error: str | None = None  # why the provider failed the batch as a whole: "code: message" (not stored)

    @property
    def queue_full(self) -> bool:
        """Failed for the enqueued-token limit: nothing wrong with its questions; they wait for
        batches in progress to finish (OpenAI's limit per organisation and model)."""
        return self.status is ProviderBatchStatus.FAILED and (self.error or "").startswith(QUEUE_FULL_CODE)


@dataclass(frozen=True)
class LineOutcome:
    """What the provider's output or error file says of one request: its completion, or why not."""

    custom_id: str
    completion: Completion | None = None
    error: str | None = None


def read_result_line(line: str) -> LineOutcome | None:
    """One line of an output or error file ({custom_id, response: {status_code, body}, error}),
    or None for a line that names no request (it cannot be matched, so it is ignored; the request
    then counts as missing and is asked again)."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("custom_id"), str):
        return None
    custom_id = record["custom_id"]
    error = record.get("error")
    if isinstance(error, dict):
        return LineOutcome(custom_id, error=f"{error.get('code') or 'error'}: {error.get('message') or ''}".strip())
    response = record.get("response")
    if not isinstance(response, dict):
        return LineOutcome(custom_id, error="the provider gave neither a response nor an error")
    body = response.get("body")
    if response.get("status_code") != 200 or not isinstance(body, dict):
        message = body.get("error", {}).get("message") if isinstance(body, dict) and isinstance(
            body.get("error"), dict) else None
        return LineOutcome(custom_id, error=f"HTTP {response.get('status_code')}: {message or 'no answer'}")
    return LineOutcome(custom_id, completion=_completion(body))


def _completion(body: dict[str, Any]) -> Completion:
    choices = body.get("choices")
    first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    message = first.get("message") if isinstance(first.get("message"), dict) else {}
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    content = message.get("content")
    return Completion(
        text=content if isinstance(content, str) else "",
        model=str(body.get("model") or ""),
        finish_reason=first.get("finish_reason"),
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
    )


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

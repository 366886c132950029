"""The direct OpenAI-compatible client's reading of error answers: the provider's words in any
body shape, and the cause each status and message means."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from firmsift.adapters.llm.http_failures import StatusFailure, explain, provider_words, refuses_format
from firmsift.domain.errors import FailureCause

words = st.text(min_size=1).filter(lambda text: text.strip() != "")


@given(words)
def test_the_message_of_an_openai_shaped_error_is_read(message: str) -> None:
    body = json.dumps({"error": {"message": message, "type": "invalid_request_error", "code": None}}).encode()
    assert provider_words(body) == message.strip()


@given(words)
def test_lm_studios_bare_string_error_is_read(message: str) -> None:
    assert provider_words(json.dumps({"error": message}).encode()) == message.strip()


@given(st.binary())
def test_any_body_gives_some_words_and_never_raises(body: bytes) -> None:
    assert isinstance(provider_words(body), str)


@pytest.mark.parametrize(
    ("status", "message", "cause", "transient"),
    [
        (429, "slow down", FailureCause.RATE_LIMITED, True),
        (400, "This model's maximum context length is 10 tokens", FailureCause.PROMPT_TOO_LONG, False),
        (500, "prompt is too long: 9000 tokens", FailureCause.PROMPT_TOO_LONG, False),
        (400, "Invalid prompt: your prompt was flagged as potentially violating our usage policy.",
         FailureCause.CONTENT_FILTER, False),
        (401, "Incorrect API key provided", FailureCause.CREDENTIALS_REFUSED, False),
        (403, "forbidden", FailureCause.CREDENTIALS_REFUSED, False),
        (404, "no such model", FailureCause.NOT_FOUND, False),
        (408, "request timeout", FailureCause.TIMEOUT, True),
        (504, "gateway timeout", FailureCause.TIMEOUT, True),
        (500, "Input should be 'text' or 'json_object' at ('body', 'response_format', 'type')",
         FailureCause.FORMAT_REFUSED, False),
        (501, "response_format is not supported", FailureCause.FORMAT_REFUSED, False),
        (400, "messages: field required", FailureCause.REJECTED, False),
        (422, "unprocessable", FailureCause.REJECTED, False),
        (500, "llama_decode returned -3", FailureCause.PROVIDER_ERROR, True),
        (503, "the json_schema backend is loading", FailureCause.PROVIDER_ERROR, True),  # 503 never refuses a format
        (418, "teapot", FailureCause.OTHER, False),
    ],
)
def test_each_status_and_message_means_one_cause(status: int, message: str, cause: FailureCause,
                                                 transient: bool) -> None:
    failure = explain(StatusFailure(status, message, None), "llm.example.com")
    assert (failure.cause, failure.transient) == (cause, transient)
    assert refuses_format(StatusFailure(status, message, None)) is (cause is FailureCause.FORMAT_REFUSED)


def test_the_status_is_quoted_only_when_the_provider_sent_it() -> None:
    sent = explain(StatusFailure(400, "bad", None), "h").sentence
    unsent = explain(StatusFailure(400, "bad", None, sent_status=False), "h").sentence
    assert "HTTP 400" in sent and "HTTP" not in unsent


def test_the_key_is_scrubbed_before_the_words_are_cut() -> None:
    failure = explain(StatusFailure(401, "Incorrect API key provided: sk-secret", None), "h",
                      lambda text: text.replace("sk-secret", "[redacted]"))
    assert "sk-secret" not in failure.sentence and "[redacted]" in failure.sentence

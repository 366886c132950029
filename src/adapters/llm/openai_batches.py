"""OpenAI's Batch API on httpx: the files endpoint (upload an input file, download result files)
and the batches endpoint (create, retrieve, list to find one by its metadata).

Our own small client rather than litellm's batch functions: five plain HTTP calls, whose answers
we read within limits as every other provider answer, with our provider batch id in the batch's
metadata and a look-up by it (litellm's list call returns one page and leaves paging to us), and
without the OpenAI SDK's own retries and typed objects in the way of a scripted test server.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx

from firmsift.adapters.llm.output_modes import OutputMode, response_format
from firmsift.adapters.web.bounded_body import BodyLimits, UnreadableBody, read_body
from firmsift.domain.economy import DeferredQuestion, ProviderBatch, ProviderBatchStatus
from firmsift.domain.errors import ProviderError

CHAT_ENDPOINT = "/v1/chat/completions"
METADATA_KEY = "firmsift_provider_batch"
DOCUMENT_LIMITS = BodyLimits(max_bytes=1024 * 1024)  # a file or batch object
RESULT_FILE_LIMITS = BodyLimits(max_bytes=1024 * 1024 * 1024)  # 50,000 answers with their evidence quoted
LIST_PAGES = 20  # batches looked through (100 a page, newest first) to find one by its metadata


class OpenAIBatches:
    """Implements ports.economy.BatchProvider against `api_base` (…/v1) with `api_key`; each
    request asks `model` (its name at the provider, without litellm's `openai/` prefix) for JSON
    in `mode` within `max_tokens`."""

    def __init__(self, client: httpx.AsyncClient, api_base: str, api_key: str | None, *, model: str,
                 max_tokens: int, mode: OutputMode = OutputMode.JSON_SCHEMA) -> None:
        self.client = client
        self.api_base = api_base.rstrip("/")
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.model = model.removeprefix("openai/")
        self.max_tokens = max_tokens
        self.mode = mode

    @classmethod
    def opened(cls, api_base: str, api_key: str | None, *, timeout: float, model: str, max_tokens: int,
               mode: OutputMode) -> OpenAIBatches:
        """A client with its own HTTP client (no redirects followed: a key is never sent elsewhere);
        aclose() closes it."""
        client = httpx.AsyncClient(timeout=timeout, follow_redirects=False)
        return cls(client, api_base, api_key, model=model, max_tokens=max_tokens, mode=mode)

    async def aclose(self) -> None:
        await self.client.aclose()

    async def upload(self, provider_batch_id: str, questions: Sequence[DeferredQuestion]) -> str:
        lines = "".join(json.dumps(self._request_line(question)) + "\n" for question in questions)
        document = await self._call("POST", "/files", data={"purpose": "batch"},
                                    files={"file": (f"{provider_batch_id}.jsonl", lines.encode(), "application/jsonl")})
        return _text(document, "id")

    async def create(self, provider_batch_id: str, input_file_id: str) -> ProviderBatch:
        document = await self._call("POST", "/batches", json={
            "input_file_id": input_file_id, "endpoint": CHAT_ENDPOINT, "completion_window": "24h",
            "metadata": {METADATA_KEY: provider_batch_id}})
        return _batch(provider_batch_id, document)

    async def find(self, provider_batch_id: str) -> ProviderBatch | None:
        after: str | None = None
        for _ in range(LIST_PAGES):
            page = await self._call("GET", "/batches", params={"limit": 100, **({"after": after} if after else {})})
            for document in page.get("data") or []:
                if isinstance(document, dict) and (document.get("metadata") or {}).get(METADATA_KEY) == provider_batch_id:
                    return _batch(provider_batch_id, document)
            if not page.get("has_more") or not page.get("last_id"):
                return None
            after = str(page["last_id"])
        return None

    async def retrieve(self, batch: ProviderBatch) -> ProviderBatch:
        return _batch(batch.id, await self._call("GET", f"/batches/{batch.batch_id}"))

    async def lines(self, file_id: str) -> list[str]:
        body = await self._send("GET", f"/files/{file_id}/content", RESULT_FILE_LIMITS)
        return [line for line in body.decode("utf-8", "replace").splitlines() if line.strip()]

    def _request_line(self, question: DeferredQuestion) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model, "max_tokens": self.max_tokens,
            "messages": [{"role": "system", "content": question.question.system},
                         {"role": "user", "content": question.question.user}],
        }
        fmt = response_format(self.mode, question.question.json_schema)
        if fmt is not None:
            body["response_format"] = fmt
        return {"custom_id": question.custom_id, "method": "POST", "url": CHAT_ENDPOINT, "body": body}

    async def _call(self, method: str, path: str, **options: Any) -> dict[str, Any]:
        body = await self._send(method, path, DOCUMENT_LIMITS, **options)
        try:
            document = json.loads(body)
        except ValueError:
            raise ProviderError(f"batch API {method} {path}: the answer is not JSON", retryable=True) from None
        if not isinstance(document, dict):
            raise ProviderError(f"batch API {method} {path}: the answer is not a JSON object", retryable=True)
        return document

    async def _send(self, method: str, path: str, limits: BodyLimits, **options: Any) -> bytes:
        request = self.client.build_request(method, self.api_base + path, headers=self.headers, **options)
        try:
            response = await self.client.send(request, stream=True)
            try:
                body = await read_body(response, limits, cut=False)
            finally:
                await response.aclose()
        except (httpx.HTTPError, UnreadableBody) as error:
            raise ProviderError(f"batch API {method} {path}: {error}", retryable=True) from error
        if response.status_code >= 400:
            raise ProviderError(f"batch API {method} {path}: HTTP {response.status_code}: {_message(body)}",
                                retryable=response.status_code == 429 or response.status_code >= 500)
        return body


def _batch(provider_batch_id: str, document: dict[str, Any]) -> ProviderBatch:
    try:
        status = ProviderBatchStatus(document.get("status"))
    except ValueError:
        raise ProviderError(f"batch API: unknown batch status {document.get('status')!r}") from None
    return ProviderBatch(id=provider_batch_id, status=status, batch_id=_text(document, "id"),
                         input_file_id=document.get("input_file_id"), output_file_id=document.get("output_file_id"),
                         error_file_id=document.get("error_file_id"), error=_batch_error(document))


def _batch_error(document: dict[str, Any]) -> str | None:
    """The batch's first error as "code: message" (`errors.data`), or None."""
    errors = document.get("errors")
    data = errors.get("data") if isinstance(errors, dict) else None
    first = data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else None
    return None if first is None else f"{first.get('code') or 'error'}: {first.get('message') or ''}"


def _text(document: dict[str, Any], name: str) -> str:
    value = document.get(name)
    if not isinstance(value, str) or not value:
        raise ProviderError(f"batch API: the answer has no {name!r}")
    return value


def _message(body: bytes) -> str:
    try:
        return str(json.loads(body)["error"]["message"])[:300]
    except (ValueError, KeyError, TypeError):
        return body[:300].decode("utf-8", "replace")

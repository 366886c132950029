"""A scripted OpenAI Batch API on loopback: the files endpoint (multipart upload, content download)
and the batches endpoint (create, retrieve, list), with scripted status transitions, output and
error files, partial failure and expiry. Its documents are the fixtures of
tests/fixtures/providers/openai-batch with ids, status, times and counts filled in."""

from __future__ import annotations

import argparse
import copy
import email.parser
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support.fake_llm_server import Decision, scripted_answer
from tests.support.loopback_http import ServerThread

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "providers" / "openai-batch"
# validating -> in_progress -> finalizing -> completed (or expired at the in_progress step)
PROGRESS = ("validating", "in_progress", "finalizing", "completed")
TOKENS = (10, 10)  # (prompt, completion) tokens each answer reports, as fake_llm_server's default Reply


def fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


@dataclass
class Script:
    """How batches go. `pace`: seconds each status lasts at least (a status moves on at most one
    step per retrieve); `fail`: custom ids answered with HTTP 500 in the error file; `drop`:
    custom ids in neither file; `expire_batches`: how many of the next batches expire after
    answering `expire_after` requests (the rest get batch_expired lines); `over_token_limit`: how
    many of the next batches fail validation for the enqueued-token limit."""

    pace: float = 0.0
    fail: set[str] = field(default_factory=set)
    drop: set[str] = field(default_factory=set)
    expire_batches: int = 0
    expire_after: int = 0
    over_token_limit: int = 0


class FakeOpenAIBatchServer:
    """Use as a context manager: `with FakeOpenAIBatchServer() as base_url:` (base_url ends in /v1).
    `uploads` holds each uploaded input file's request lines; `created` each created batch id."""

    def __init__(self, script: Script | None = None, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.script = copy.deepcopy(script) if script is not None else Script()  # it counts down expire_batches
        self.files: dict[str, tuple[dict[str, Any], bytes]] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.uploads: dict[str, list[dict[str, Any]]] = {}
        self.created: list[str] = []
        self.requests: list[tuple[str, str]] = []  # (method, path)
        self._moved_at: dict[str, float] = {}
        self._expiring: set[str] = set()
        self._over_limit: set[str] = set()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._server = ServerThread(host, port, _handler_for(self), name="fake-openai-batch")

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.port}/v1"

    def __enter__(self) -> str:
        self._server.start()
        return self.base_url

    def __exit__(self, *exc_info: object) -> None:
        self._server.stop()

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def answered_requests(self) -> int:
        """Requests answered with a completion over all batches (what the provider bills)."""
        return sum(1 for _meta, content in self.files.values() for line in content.splitlines()
                   if line and (json.loads(line).get("response") or {}).get("status_code") == 200)

    # -- endpoints --------------------------------------------------------------------------

    def upload(self, purpose: str, filename: str, content: bytes) -> tuple[int, dict[str, Any]]:
        if purpose != "batch":
            return 400, _error(f"purpose must be 'batch' here, not {purpose!r}")
        lines = [json.loads(line) for line in content.decode().splitlines() if line.strip()]
        if not lines or any(set(line) != {"custom_id", "method", "url", "body"} for line in lines):
            return 400, _error("each line must be {custom_id, method, url, body}")
        if len({line["custom_id"] for line in lines}) != len(lines) or len(lines) > 50_000:
            return 400, _error("custom_id must be unique within a file of at most 50,000 requests")
        with self._lock:
            document = self._file(filename, content, "batch")
            self.uploads[document["id"]] = lines
        return 200, document

    def create(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if body.get("endpoint") != "/v1/chat/completions" or body.get("completion_window") != "24h":
            return 400, _error("endpoint must be /v1/chat/completions and completion_window 24h")
        with self._lock:
            lines = self.uploads.get(str(body.get("input_file_id")))
            if lines is None:
                return 404, _error(f"No such File object: {body.get('input_file_id')}")
            batch = fixture("batch-validating.json")
            now = int(time.time())
            batch.update(id=f"batch_{next(self._ids):06d}", input_file_id=body["input_file_id"], created_at=now,
                         expires_at=now + 86400, metadata=body.get("metadata") or {},
                         request_counts={"total": len(lines), "completed": 0, "failed": 0})
            self.batches[batch["id"]] = batch
            self.created.append(batch["id"])
            self._moved_at[batch["id"]] = time.monotonic()
            if self.script.over_token_limit > 0:
                self.script.over_token_limit -= 1
                self._over_limit.add(batch["id"])
            elif self.script.expire_batches > 0:
                self.script.expire_batches -= 1
                self._expiring.add(batch["id"])
        return 200, batch

    def retrieve(self, batch_id: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            batch = self.batches.get(batch_id)
            if batch is None:
                return 404, _error(f"No batch found with id '{batch_id}'.")
            if batch["status"] in PROGRESS[:-1] and time.monotonic() - self._moved_at[batch_id] >= self.script.pace:
                self._step(batch)
            return 200, copy.deepcopy(batch)

    def listing(self, limit: int, after: str | None) -> tuple[int, dict[str, Any]]:
        with self._lock:
            newest_first = list(reversed(self.created))
            start = newest_first.index(after) + 1 if after in newest_first else 0
            page = [copy.deepcopy(self.batches[b]) for b in newest_first[start:start + limit]]
        listing = fixture("batch-list.json")
        listing.update(data=page, first_id=page[0]["id"] if page else None, last_id=page[-1]["id"] if page else None,
                       has_more=start + limit < len(newest_first))
        return 200, listing

    def content(self, file_id: str) -> bytes | None:
        with self._lock:
            found = self.files.get(file_id)
        return None if found is None else found[1]

    # -- the batch's progress ---------------------------------------------------------------

    def _step(self, batch: dict[str, Any]) -> None:
        now = int(time.time())
        self._moved_at[batch["id"]] = time.monotonic()
        if batch["status"] == "validating" and batch["id"] in self._over_limit:
            failed = fixture("batch-failed-token-limit.json")
            batch.update(status="failed", failed_at=now, errors=failed["errors"])
            return
        if batch["status"] == "in_progress" and batch["id"] in self._expiring:
            self._finish(batch, "expired", answered=self.script.expire_after, now=now)
            return
        batch["status"] = PROGRESS[PROGRESS.index(batch["status"]) + 1]
        batch[f"{batch['status']}_at"] = now
        if batch["status"] == "completed":
            self._finish(batch, "completed", answered=None, now=now)

    def _finish(self, batch: dict[str, Any], status: str, *, answered: int | None, now: int) -> None:
        """Write the output and error files: each request answered (up to `answered`), failed,
        dropped, or (past `answered`) expired."""
        template = fixture("output-line.json")
        outputs: list[str] = []
        errors: list[str] = []
        for index, request in enumerate(self.uploads[batch["input_file_id"]]):
            custom_id = request["custom_id"]
            line = copy.deepcopy(template)
            line.update(id=f"batch_req_{next(self._ids):06d}", custom_id=custom_id)
            if custom_id in self.script.drop:
                continue
            if answered is not None and index >= answered:
                expired = fixture("error-line-expired.json")
                expired.update(id=line["id"], custom_id=custom_id)
                errors.append(json.dumps(expired))
            elif custom_id in self.script.fail:
                line["response"] = {"status_code": 500, "request_id": f"req_{index}",
                                    "body": _error("The server had an error processing your request.")}
                errors.append(json.dumps(line))
            else:
                line["response"]["body"] = _completion(request["body"])
                outputs.append(json.dumps(line))
        batch.update(status=status, **{f"{status}_at": now})
        batch["request_counts"] = {"total": len(self.uploads[batch["input_file_id"]]),
                                   "completed": len(outputs), "failed": len(errors)}
        batch["output_file_id"] = self._file("batch_output.jsonl", _jsonl(outputs), "batch_output")["id"] if outputs else None
        batch["error_file_id"] = self._file("batch_errors.jsonl", _jsonl(errors), "batch_output")["id"] if errors else None

    def _file(self, filename: str, content: bytes, purpose: str) -> dict[str, Any]:
        document = fixture("file-uploaded.json")
        document.update(id=f"file-{next(self._ids):06d}", bytes=len(content), created_at=int(time.time()),
                        filename=filename, purpose=purpose)
        self.files[document["id"]] = (document, content)
        return document


def _completion(body: dict[str, Any]) -> dict[str, Any]:
    """The chat completion fake_llm_server answers the same request with (by default)."""
    content = json.dumps(scripted_answer(body, Decision()))
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "fake-model"), "system_fingerprint": None,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": TOKENS[0], "completion_tokens": TOKENS[1], "total_tokens": sum(TOKENS)}}


def _jsonl(lines: list[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}


def _handler_for(server: FakeOpenAIBatchServer) -> type[BaseHTTPRequestHandler]:
    class BatchHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 - name fixed by BaseHTTPRequestHandler
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            path = urlsplit(self.path).path
            server.requests.append(("POST", path))
            if path == "/v1/files":
                form = _multipart(self.headers.get("Content-Type", ""), raw)
                purpose = form.get("purpose", (None, b""))[1].decode()
                filename, content = form.get("file", ("", b""))
                self._json(*server.upload(purpose, filename or "", content))
            elif path == "/v1/batches":
                self._json(*server.create(json.loads(raw or b"{}")))
            else:
                self._json(404, _error(f"no route for POST {path}"))

        def do_GET(self) -> None:  # noqa: N802
            parts = urlsplit(self.path)
            segments = parts.path.strip("/").split("/")
            server.requests.append(("GET", parts.path))
            if segments == ["v1", "batches"]:
                query = parse_qs(parts.query)
                self._json(*server.listing(int(query.get("limit", ["20"])[0]), query.get("after", [None])[0]))
            elif len(segments) == 3 and segments[:2] == ["v1", "batches"]:
                self._json(*server.retrieve(segments[2]))
            elif len(segments) == 4 and segments[:2] == ["v1", "files"] and segments[3] == "content":
                content = server.content(segments[2])
                if content is None:
                    self._json(404, _error(f"No such File object: {segments[2]}"))
                else:
                    self._send(200, content, "application/octet-stream")
            else:
                self._json(404, _error(f"no route for GET {parts.path}"))

        def _json(self, status: int, document: dict[str, Any]) -> None:
            self._send(status, json.dumps(document).encode(), "application/json")

        def _send(self, status: int, payload: bytes, content_type: str) -> None:
            self.close_connection = True
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    return BatchHandler


def _multipart(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
    """The parts of a multipart/form-data body by field name: (filename, bytes)."""
    message = email.parser.BytesParser().parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + raw)
    parts: dict[str, tuple[str | None, bytes]] = {}
    for part in message.get_payload() if message.is_multipart() else []:
        name = part.get_param("name", header="content-disposition")
        if isinstance(name, str):
            parts[name] = (part.get_filename(), part.get_payload(decode=True) or b"")
    return parts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--pace", type=float, default=0.0, help="seconds each batch status lasts at least")
    args = parser.parse_args(argv)
    server = FakeOpenAIBatchServer(Script(pace=args.pace), port=args.port)
    print(server.base_url, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()

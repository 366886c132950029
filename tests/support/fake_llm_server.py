"""A scripted OpenAI-compatible chat-completions server on loopback, for tests and end-to-end runs."""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import math
import re
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from tests.support.loopback_http import NoDelayHandler, ServerThread
from tests.support.provider_limits import ProviderLimits, tokens_of

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
PROVIDER_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "providers"

# What llama.cpp's server answers when asked for OpenAI's json_schema response format.
LLAMA_CPP_JSON_SCHEMA_REFUSAL = (
    'response_format type must be one of "text" or "json_object", but got: json_schema'
)
RESPONSE_FORMAT_REFUSAL = "response_format is not supported by this server"
TOGETHER_TIMEOUT = 10.0  # seconds an answer waits for the others of `answer_together`

_HOST_NAME = re.compile(r"\b(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}\b")
_LABELLED_DOMAIN = re.compile(r"domain[^\n:]{0,20}:\s*[`\"'<]*([^\s`\"'>]+)", re.IGNORECASE)
_ANSWER_FIELD = re.compile(r"\b(is_[a-z0-9_]+)\b")
_EVIDENCE_BLOCK = re.compile(r"<<<EVIDENCE (\S+)>>>\n(.*?)\n<<<END EVIDENCE \1>>>", re.DOTALL)
_ENTRY_HEADING = re.compile(r"^\[\d+\] ")
QUOTE_LIMIT = 200  # characters of the evidence the scripted answer quotes


@dataclass(frozen=True)
class Reply:
    """One scripted answer. `body` (bytes or str) is sent verbatim instead of a chat completion;
    `headers` are added to the response (e.g. Retry-After); a `delay` of math.inf hangs until
    the server stops (a provider that accepts the request and never answers)."""

    content: str | None = None
    finish_reason: str | None = "stop"
    status: int = 200
    delay: float = 0.0
    body: bytes | str | None = None
    refusal: str | None = None
    model: str = "fake-model"
    headers: tuple[tuple[str, str], ...] = ()
    tokens: tuple[int, int] = (10, 10)  # (prompt, completion) tokens reported in `usage`
    content_type: str = "application/json"


def load_fixture(name: str) -> Reply:
    """A real server's recorded answer (tests/fixtures/providers/NAME.json) as a Reply: the same
    status, headers and body bytes."""
    recorded = json.loads((PROVIDER_FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    headers = {name.lower(): value for name, value in recorded.get("headers", {}).items()}
    headers.pop("server", None)  # the fake's own Server header stands in for it
    content_type = headers.pop("content-type", "application/json")
    return Reply(status=recorded["status"], body=json.dumps(recorded["body"]), content_type=content_type,
                 headers=tuple(headers.items()))


@dataclass(frozen=True)
class ReceivedRequest:
    """What the server saw: path, headers (lower-case names) and the JSON body (raw text if not JSON)."""

    path: str
    headers: dict[str, str]
    body: Any

    @property
    def response_format(self) -> dict[str, Any] | None:
        return self.body.get("response_format") if isinstance(self.body, dict) else None

    @property
    def response_format_type(self) -> str | None:
        return (self.response_format or {}).get("type")

    @property
    def format_kind(self) -> str:
        """What the request asked for, as `refuse` keys name it: json_schema, json_object with
        schema ("json_object+schema"), json_object, or "none"."""
        kind = self.response_format_type
        if kind == "json_object" and "schema" in (self.response_format or {}):
            return "json_object+schema"
        return kind or "none"


@dataclass
class Decision:
    """How the scripted default answer is chosen when no reply is queued."""

    answer: str = "auto"  # "yes", "no" or "auto": no when the domain contains `no_if_contains`
    no_if_contains: str = "bank"


class FakeLLMServer:
    """Threaded loopback HTTP server answering chat completions from a queue of replies.

    Use as a context manager: `with FakeLLMServer() as base_url: ...`. Queued replies are served
    first-in first-out; when the queue is empty, `default` is served, or, if `default` is None, a
    deterministic JSON answer for the boolean field the request asks for (see `scripted_answer`).
    Every request is recorded in `requests`, refused ones included, so tests can count calls.
    `refuse` answers requests for a format kind (see ReceivedRequest.format_kind; "json_object"
    covers both json_object kinds) with a fixed reply, typically a real server's (load_fixture).
    `limits` enforces a provider's requests and tokens per minute (ProviderLimits): every answer
    then carries its x-ratelimit-* headers and bills about a token per four characters of the
    messages and the answer; a request that does not fit is answered 429 with Retry-After (its
    queued reply, if any, is spent all the same).
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        default: Reply | None = None,
        reject_json_schema: bool = False,
        reject_response_format: bool = False,
        delay: float = 0.0,
        decision: Decision | None = None,
        log_path: Path | None = None,
        keep_alive: bool = False,
        refuse: dict[str, Reply] | None = None,
        count_tokens: bool = False,
        limits: ProviderLimits | None = None,
    ) -> None:
        self.default = default
        # Generated answers report usage as ~4 characters a token of the messages and the answer
        # (a benchmark of the dry-run estimate needs usage that varies with the prompt); else 10/10.
        self.count_tokens = count_tokens
        self.limits = limits
        self.refuse = dict(refuse or {})
        # Real providers keep connections open; tests that stop and restart the server default
        # to closing each one, so no client holds a connection to a server that went away.
        self.keep_alive = keep_alive
        self.reject_json_schema = reject_json_schema
        self.reject_response_format = reject_response_format
        self.delay = delay
        self.decision = decision or Decision()
        self.log_path = log_path
        self.host = host
        self.requests: list[ReceivedRequest] = []
        self._queue: collections.deque[Reply] = collections.deque()
        self._by_domain: dict[tuple[str | None, str], Reply] = {}
        self._lock = threading.Lock()
        # Concurrency, seen from the server: `most_at_once` is the most requests it was answering
        # at the same time; with `answer_together` = N each answer is held until N requests have
        # arrived (or TOGETHER_TIMEOUT passes), so a client that sends N calls side by side is
        # told apart from one that sends them in series however loaded the machine is.
        self.most_at_once = 0
        self.answer_together = 0
        self.total_slots: int | None = None  # set: answers GET /props as llama.cpp's server does
        self._answering = self._arrived = 0
        self._answering_changed = threading.Condition(self._lock)
        self._server = ServerThread(host, port, _handler_for(self), name="fake-llm")

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def enqueue(
        self,
        content: str | None = None,
        *,
        finish_reason: str | None = "stop",
        status: int = 200,
        delay: float = 0.0,
        body: bytes | str | None = None,
        refusal: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Queue one reply for the next request that is not refused by a reject_* mode."""
        reply = Reply(content, finish_reason, status, delay, body, refusal, headers=tuple((headers or {}).items()))
        with self._lock:
            self._queue.append(reply)

    def script(self, domain: str, reply: Reply, *, model: str | None = None) -> None:
        """Answer every request about `domain` (from `model` only, if given) with `reply`, in
        whatever order concurrent requests arrive. Queued replies still come first."""
        with self._lock:
            self._by_domain[(model, domain)] = reply

    def script_file(self, path: Path) -> None:
        """Load scripted replies from JSON: {"<model or *>": {"<domain>": {Reply fields}}}."""
        for model, domains in json.loads(path.read_text(encoding="utf-8")).items():
            for domain, fields in domains.items():
                fields = {**fields, "tokens": tuple(fields.get("tokens", (10, 10)))}
                self.script(domain, Reply(**fields), model=None if model == "*" else model)

    def start(self) -> str:
        self._server.start()
        return self.base_url

    def stop(self) -> None:
        self._server.stop()

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def respond(self, received: ReceivedRequest) -> tuple[int, bytes, float, tuple[tuple[str, str], ...]]:
        """Record the request and decide the (status, body, delay, extra headers) to answer it with."""
        refusal = self._refusal(received)
        with self._lock:
            self.requests.append(received)
            reply = refusal or (self._queue.popleft() if self._queue else self._scripted(received.body))
        if reply is None:
            content = json.dumps(scripted_answer(received.body, self.decision))
            reply = self.default or Reply(content=content, tokens=self._usage(received.body, content))
        if self.limits is not None and reply.status == 200:
            reply = self._within_limits(received, reply)
        self._log(received, reply)
        headers = reply.headers + (("content-type", reply.content_type),)
        return reply.status, _encode(reply), max(reply.delay, self.delay), headers

    def _usage(self, body: Any, content: str) -> tuple[int, int]:
        if not self.count_tokens:
            return Reply.tokens
        messages = body.get("messages", []) if isinstance(body, dict) else []
        prompt = sum(len(m.get("content") or "") for m in messages if isinstance(m, dict))
        return math.ceil(prompt / 4), math.ceil(len(content) / 4)

    def _within_limits(self, received: ReceivedRequest, reply: Reply) -> Reply:
        """The reply billed by size and with the limits' headers, or a 429 if it does not fit."""
        assert self.limits is not None
        billed = (tokens_of(json.dumps(received.body)), tokens_of(reply.content or ""))
        allowed, headers = self.limits.charge(sum(billed))
        if not allowed:
            return Reply("Rate limit reached for requests or tokens per minute", status=429,
                         delay=reply.delay, headers=headers)
        return dataclasses.replace(reply, tokens=billed, headers=reply.headers + headers)

    def _scripted(self, body: Any) -> Reply | None:
        domain = requested_domain(body)
        model = body.get("model") if isinstance(body, dict) else None
        if domain is None:
            return None
        return self._by_domain.get((model, domain)) or self._by_domain.get((None, domain))

    def answer_after(self, delay: float) -> None:
        """Wait before answering: until `answer_together` requests have arrived, then `delay` seconds."""
        with self._answering_changed:
            self._answering += 1
            self._arrived += 1
            self.most_at_once = max(self.most_at_once, self._answering)
            self._answering_changed.notify_all()
            self._answering_changed.wait_for(lambda: self._arrived >= self.answer_together, TOGETHER_TIMEOUT)
        try:
            if delay:
                self.wait(delay)
        finally:
            with self._answering_changed:
                self._answering -= 1

    def wait(self, seconds: float) -> None:
        # Event.wait refuses an infinite timeout; None waits until stop() sets the event.
        self._server.stopping.wait(None if math.isinf(seconds) else seconds)

    def _refusal(self, received: ReceivedRequest) -> Reply | None:
        kind = received.response_format_type
        scripted = self.refuse.get(received.format_kind) or self.refuse.get(kind or "none")
        if scripted is not None:
            return scripted
        if self.reject_response_format and received.response_format is not None:
            return Reply(RESPONSE_FORMAT_REFUSAL, status=400)
        if self.reject_json_schema and kind == "json_schema":
            return Reply(LLAMA_CPP_JSON_SCHEMA_REFUSAL, status=400)
        return None

    def _log(self, received: ReceivedRequest, reply: Reply) -> None:
        if self.log_path is None:
            return
        line = json.dumps(
            {
                "time": time.time(),
                "path": received.path,
                "domain": requested_domain(received.body),
                "response_format": received.response_format_type,
                "format": received.format_kind,
                "status": reply.status,
                "content": reply.content,
                "tokens": sum(reply.tokens) if reply.status == 200 else 0,
            }
        )
        with self._lock, self.log_path.open("a", encoding="utf-8") as log:
            log.write(line + "\n")


def _handler_for(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class ChatCompletionsHandler(NoDelayHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 - name fixed by BaseHTTPRequestHandler
            # llama.cpp's server says how many requests it serves at once at /props (total_slots);
            # with total_slots unset this server is like llama-cpp-python's, which has no /props.
            if self.path.split("?")[0] == "/props" and server.total_slots is not None:
                self._send(200, json.dumps({"total_slots": server.total_slots, "model_alias": "fake",
                                            "build_info": "fake-llm"}).encode())
                return
            self._send(404, _error_body(f"no route for {self.path}", 404))

        def do_POST(self) -> None:  # noqa: N802 - name fixed by BaseHTTPRequestHandler
            expected = int(self.headers.get("Content-Length") or 0)
            received = self.rfile.read(expected)
            if len(received) < expected:
                # The client went away mid-body (a worker killed -9 while sending): a real server
                # never sees a request here, so none is answered or recorded.
                self.close_connection = True
                return
            raw = received.decode("utf-8", "replace")
            if self.path.split("?")[0] not in CHAT_PATHS:
                self._send(404, _error_body(f"no route for {self.path}", 404))
                return
            try:
                body: Any = json.loads(raw)
            except ValueError:
                body = raw
            headers = {name.lower(): value for name, value in self.headers.items()}
            status, payload, delay, extra = server.respond(ReceivedRequest(self.path, headers, body))
            server.answer_after(delay)
            self._send(status, payload, extra)

        def _send(self, status: int, payload: bytes, extra: tuple[tuple[str, str], ...] = ()) -> None:
            content_type = next((v for k, v in extra if k == "content-type"), "application/json")
            extra = tuple((k, v) for k, v in extra if k != "content-type")
            self.close_connection = not server.keep_alive
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                if not server.keep_alive:
                    self.send_header("Connection", "close")
                for name, value in extra:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except OSError:
                pass  # the client gave up (a timeout test); nothing to tell it

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass  # keep test output quiet; the request log is `requests` / --log

    return ChatCompletionsHandler


def _encode(reply: Reply) -> bytes:
    if reply.body is not None:
        return reply.body.encode() if isinstance(reply.body, str) else reply.body
    if reply.status >= 400:
        return _error_body(reply.content or f"fake error {reply.status}", reply.status)
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.refusal is not None:
        message["refusal"] = reply.refusal
    completion = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": reply.model,
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
        "usage": {"prompt_tokens": reply.tokens[0], "completion_tokens": reply.tokens[1],
                  "total_tokens": sum(reply.tokens)},
    }
    return json.dumps(completion).encode()


def _error_body(message: str, status: int) -> bytes:
    kind = "invalid_request_error" if status < 500 else "server_error"
    return json.dumps({"error": {"code": status, "message": message, "type": kind}}).encode()


def scripted_answer(body: Any, decision: Decision) -> dict[str, Any]:
    """A deterministic answer shaped like the request's schema: the boolean field (is_cpg for the
    cpg classifier) decided by `decision`, integers 4, `quote` a passage of the evidence the
    request carries (see `evidence_passage`), other strings a short reason."""
    domain = requested_domain(body)
    if decision.answer == "auto":
        verdict = not (domain and decision.no_if_contains in domain)
    else:
        verdict = decision.answer == "yes"
    reason = f"fake answer for {domain or 'an unnamed domain'}"
    quote = evidence_passage(_user_text(body))
    properties = _schema_properties(body)
    if not properties:
        return {_answer_field(body): verdict, "confidence": 4, "reasoning": reason, "quote": quote}
    answer: dict[str, Any] = {}
    for name, spec in properties.items():
        kinds = spec.get("type") if isinstance(spec, dict) else None
        kinds = kinds if isinstance(kinds, list) else [kinds]
        if name == "quote":
            answer[name] = quote
        elif "boolean" in kinds:
            answer[name] = verdict
        elif "integer" in kinds or "number" in kinds:
            answer[name] = 4
        else:
            answer[name] = reason
    return answer


def evidence_passage(user_text: str) -> str:
    """What a well-behaved model quotes: the longest text line of the evidence block (a snippet or
    title, without the `[n]` and `URL:` headings), cut at a space to QUOTE_LIMIT characters;
    '' when the prompt carries no evidence."""
    block = _EVIDENCE_BLOCK.search(user_text)
    if block is None:
        return ""
    lines = [_ENTRY_HEADING.sub("", line) for line in block.group(2).splitlines() if not line.startswith("URL: ")]
    passage = max(lines, key=len, default="")
    if len(passage) > QUOTE_LIMIT:
        cut = passage.rfind(" ", 0, QUOTE_LIMIT + 1)
        passage = passage[: cut if cut > 0 else QUOTE_LIMIT]
    return passage.strip()


def requested_domain(body: Any) -> str | None:
    """The domain the user message asks about: after a 'domain:' label, else the first host name."""
    text = _user_text(body)
    labelled = _LABELLED_DOMAIN.search(text)
    if labelled and "." in labelled.group(1):
        return labelled.group(1).lower().rstrip(".,;")
    first = _HOST_NAME.search(text.lower())
    return first.group(0) if first else None


def _user_text(body: Any) -> str:
    if not isinstance(body, dict):
        return str(body)
    parts = [m.get("content") for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") == "user"]
    return "\n".join(p for p in parts if isinstance(p, str))


def _schema_properties(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        return {}
    rf = body.get("response_format") or {}
    schema = (rf.get("json_schema") or {}).get("schema") if rf.get("type") == "json_schema" else rf.get("schema")
    properties = (schema or {}).get("properties") if isinstance(schema, dict) else None
    return properties if isinstance(properties, dict) else {}


def _answer_field(body: Any) -> str:
    if isinstance(body, dict):
        texts = [m.get("content") for m in body.get("messages", []) if isinstance(m, dict)]
        found = _ANSWER_FIELD.search("\n".join(t for t in texts if isinstance(t, str)))
        if found:
            return found.group(1)
    return "answer"


def main(argv: list[str] | None = None) -> None:
    """Run standalone: print the bound port on stdout's first line, then serve until killed."""
    parser = argparse.ArgumentParser(prog="python -m tests.support.fake_llm_server", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to wait before each answer")
    parser.add_argument("--answer", choices=("yes", "no", "auto"), default="auto")
    parser.add_argument("--no-if-contains", default="bank", help="with --answer auto: say no for such domains")
    parser.add_argument("--log", type=Path, help="append one JSON line per request received")
    parser.add_argument("--reject-json-schema", action="store_true", help="400 on json_schema, like llama.cpp")
    parser.add_argument("--reject-response-format", action="store_true", help="400 on any response_format")
    parser.add_argument("--keep-alive", action="store_true", help="keep connections open, as real providers do")
    parser.add_argument("--refuse", action="append", default=[], metavar="KIND=FIXTURE",
                        help="answer requests for a format kind (json_schema, json_object, json_object+schema, "
                             "none) with a recorded server answer from tests/fixtures/providers")
    parser.add_argument("--count-tokens", action="store_true",
                        help="report usage as ~4 characters a token of the messages and the answer (default: 10/10)")
    parser.add_argument("--limit-requests", type=int, metavar="R",
                        help="enforce R requests per minute, as OpenAI does (with --limit-tokens)")
    parser.add_argument("--limit-tokens", type=int, metavar="T", help="enforce T tokens per minute")
    parser.add_argument("--script", type=Path, help='JSON replies by model and domain: {"*": {"a.com": {"content": ...}}}')
    args = parser.parse_args(argv)
    if (args.limit_requests is None) != (args.limit_tokens is None):
        parser.error("--limit-requests and --limit-tokens go together")
    server = FakeLLMServer(
        host=args.host,
        port=args.port,
        delay=args.delay,
        decision=Decision(args.answer, args.no_if_contains),
        log_path=args.log,
        reject_json_schema=args.reject_json_schema,
        reject_response_format=args.reject_response_format,
        keep_alive=args.keep_alive,
        count_tokens=args.count_tokens,
        refuse={kind: load_fixture(name) for kind, _, name in (rule.partition("=") for rule in args.refuse)},
        limits=ProviderLimits(args.limit_requests, args.limit_tokens) if args.limit_requests is not None else None,
    )
    if args.script:
        server.script_file(args.script)
    print(server.port, flush=True)
    print(f"fake LLM server listening on {server.base_url}", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()

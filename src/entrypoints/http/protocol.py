"""uvicorn's HTTP/1.1 protocol (h11) with deadlines for receiving a request, a connection cap,
and the contract's JSON error shape for requests refused before they reach the app."""

from __future__ import annotations

import asyncio
import json
import logging
import resource
from http import HTTPStatus
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from firmsift.entrypoints.http.errors import error_body

log = logging.getLogger("firmsift.http")
LINGER_SECONDS = 1.0  # after a refusal, how long unread request bytes are drained before the close


@dataclass(frozen=True)
class ConnectionLimits:
    """How long a client may take to send a request, and how many connections are served at once.

    uvicorn bounds only the idle time between requests (timeout_keep_alive) and resets it on
    every byte, so a client sending one header line, or one body byte, every few seconds holds
    its connection (and a file descriptor) for ever; and uvicorn accepts connections until the
    process runs out of descriptors. These limits close both holes."""

    header_timeout: float
    body_timeout: float
    max_connections: int
    # An upload (a POST to one of `upload_paths`) has no deadline for its whole body: it is cut when
    # no byte came for `upload_idle_timeout`, or when, past `body_timeout`, it has come slower than
    # `min_upload_rate` bytes a second on average (a client dripping bytes to hold the connection).
    upload_idle_timeout: float = 10.0
    min_upload_rate: int = 16384
    upload_paths: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ProtocolRefusal:
    status: int
    code: str
    message: str


def refusal_for(error: h11.RemoteProtocolError | None) -> ProtocolRefusal:
    """The answer to a request h11 could not parse. h11's own message is not echoed: some of its
    messages quote the offending bytes, and the category is what a client needs."""
    text = str(error) if error is not None else ""
    hint = getattr(error, "error_status_hint", 400)
    if "Content-Length" in text:
        return ProtocolRefusal(400, "bad_content_length",
                               "Content-Length must be one whole number of bytes, at most 20 digits")
    if hint == 431:
        return ProtocolRefusal(431, "headers_too_large", "request line and headers are too large")
    if hint == 501:
        return ProtocolRefusal(501, "unsupported_transfer_encoding",
                               "the only Transfer-Encoding accepted is a single 'chunked'")
    if "chunk" in text:
        return ProtocolRefusal(400, "malformed_chunked_body", "the chunked request body is malformed")
    return ProtocolRefusal(400, "malformed_request", "the request is not valid HTTP/1.1")


def raw_response(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> bytes:
    """A complete JSON error response, written straight to the socket (the request may be unparsed)."""
    body = json.dumps(error_body(code, message)).encode()
    reason = reason_phrase(status)
    head = [f"HTTP/1.1 {status} {reason}", "content-type: application/json",
            f"content-length: {len(body)}", "connection: close"]
    head += [f"{name}: {value}" for name, value in (headers or {}).items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def reason_phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def connection_cap(requested: int, reserved: int) -> int:
    """The number of connections this process can really hold: `requested`, unless the file
    descriptor limit is lower. The soft limit is raised towards the hard one first (as Go's
    runtime does); `reserved` descriptors are kept for everything else (database connections,
    log files, the listening socket). Past the limit, accept() fails with EMFILE in a loop."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = requested + reserved
    if soft != resource.RLIM_INFINITY and soft < wanted:
        raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return requested
    cap = max(1, soft - reserved)
    log.warning("FIRMSIFT_MAX_CONNECTIONS=%d lowered to %d: the process may open %d files (ulimit -n)",
                requested, cap, soft)
    return cap


class _RecordingConnection(h11.Connection):
    """An h11 connection that remembers why it refused the peer's bytes (uvicorn drops the reason)."""

    last_error: h11.RemoteProtocolError | None = None

    def next_event(self) -> Any:
        try:
            return super().next_event()
        except h11.RemoteProtocolError as error:
            self.last_error = error
            raise


class GuardedH11Protocol(H11Protocol):
    """H11Protocol with: a deadline for the request line and headers (from the connection, or
    from the first byte of a keep-alive connection's next request), a deadline for the body
    (from the end of the headers), a cap on open connections, and JSON refusals. A timed-out
    request is answered 408 when no response has started. Over the cap, the connection that has
    waited longest on its client for a request is closed to make room (so a server full of slow or
    idle clients still answers a health check); when every connection is mid-request, the new
    one is refused with 503."""

    limits: ConnectionLimits  # set by guarded_protocol()
    # Connections of this server waiting on their client (a request head arriving, or idle between
    # requests), oldest first: over the cap, the oldest is closed to make room (set by guarded_protocol()).
    waiting: dict[GuardedH11Protocol, None]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conn = _RecordingConnection(h11.SERVER, self.conn._max_incomplete_event_size)
        self._phase: str | None = None  # "head", "body" or "upload" while a deadline runs
        self._deadline: asyncio.TimerHandle | None = None
        self._closing = False
        self._upload_began = self._last_data = 0.0  # loop time
        self._upload_bytes = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections:
            victim = next(iter(self.waiting), None)
            if victim is None:
                log.warning("connection refused: %d connections open and mid-request, the limit is %d",
                            len(self.connections) - 1, self.limits.max_connections)
                # Written and closed at once: lingering would hold the descriptor the cap is there to save.
                self._closing = True
                transport.write(raw_response(503, "too_many_connections",
                                             "the server has too many open connections; try again shortly",
                                             {"retry-after": "1"}))
                transport.close()
                return
            log.warning("connection limit %d reached: closed the connection waiting longest on its client",
                        self.limits.max_connections)
            victim._make_room()
        self._arm("head", self.limits.header_timeout, self._head_timed_out)

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return  # drained: the answer is written and the connection is closing
        if self._phase is None and self.conn.their_state is h11.IDLE:
            self._arm("head", self.limits.header_timeout, self._head_timed_out)  # a keep-alive's next request
            self._upload_bytes = 0
        self._last_data = self.loop.time()
        self._upload_bytes += len(data)  # counted from the upload's start (its head's bytes included)
        super().data_received(data)
        self._follow_request()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow_request()
        if not self._closing and self._phase is None and self.conn.their_state is h11.IDLE:
            self.waiting[self] = None  # idle between requests, until uvicorn's keep-alive timeout

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _make_room(self) -> None:
        """Closed for a newer connection: a request head still arriving gets a 503 first."""
        arriving = self._phase == "head"
        self._disarm()
        self._unset_keepalive_if_required()
        self._closing = True
        if arriving and not self.transport.is_closing():
            self.transport.write(raw_response(503, "too_many_connections",
                                              "the server has too many open connections; try again shortly",
                                              {"retry-after": "1"}))
        self.transport.close()

    def send_400_response(self, msg: str) -> None:
        assert isinstance(self.conn, _RecordingConnection)
        self._refuse(refusal_for(self.conn.last_error))

    def shutdown(self) -> None:
        if self._closing:
            self.transport.close()
            return
        super().shutdown()

    def _follow_request(self) -> None:
        """Move the deadline along with h11's view of the request being received."""
        if self._closing:
            return
        state = self.conn.their_state
        if state is h11.IDLE:
            return  # a head is arriving (its deadline runs) or the connection idles (keep-alive)
        if state is h11.SEND_BODY:
            if self._phase in ("body", "upload"):
                return
            if self._is_upload():
                self._upload_began = self.loop.time()
                self._arm("upload", min(self.limits.upload_idle_timeout, self.limits.body_timeout), self._upload_check)
            else:
                self._arm("body", self.limits.body_timeout, self._body_timed_out)
            return
        self._disarm()  # the request is in (or the connection is done): the app's time is not ours to bound

    def _arm(self, phase: str, seconds: float, callback: Callable[[], None]) -> None:
        self._disarm()
        self._phase = phase
        self._deadline = self.loop.call_later(seconds, callback)
        if phase == "head":
            self.waiting[self] = None

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = None
        self._phase = None
        self.waiting.pop(self, None)

    def _is_upload(self) -> bool:
        scope = getattr(self, "scope", None)
        return bool(scope) and scope["method"] == "POST" and scope["path"] in self.limits.upload_paths

    def _upload_check(self) -> None:
        """An upload's timer: cut it when idle too long or, past body_timeout, too slow; else look again."""
        now = self.loop.time()
        idle = now - self._last_data
        elapsed = now - self._upload_began
        if idle >= self.limits.upload_idle_timeout:
            self._cut_body(f"no byte of the request body for {self.limits.upload_idle_timeout:g}s")
        elif elapsed >= self.limits.body_timeout and self._upload_bytes < self.limits.min_upload_rate * elapsed:
            self._cut_body(f"request body arriving slower than {self.limits.min_upload_rate} bytes a second "
                           f"(FIRMSIFT_MIN_UPLOAD_RATE) after {elapsed:.0f}s")
        else:
            wait = self.limits.upload_idle_timeout - idle
            if elapsed < self.limits.body_timeout:
                wait = min(wait, self.limits.body_timeout - elapsed)
            self._deadline = self.loop.call_later(max(wait, 0.05), self._upload_check)

    def _head_timed_out(self) -> None:
        log.debug("connection closed: request headers not received within %gs", self.limits.header_timeout)
        self._refuse(ProtocolRefusal(408, "request_timeout",
                                     f"request line and headers not received within {self.limits.header_timeout:g}s"))

    def _body_timed_out(self) -> None:
        self._cut_body(f"request body not received within {self.limits.body_timeout:g}s")

    def _cut_body(self, why: str) -> None:
        log.debug("connection closed: %s", why)
        cycle = self.cycle
        answered = cycle is not None and cycle.response_started
        if cycle is not None:
            # The app sees a disconnect; whatever it answers goes nowhere.
            cycle.disconnected = True
            cycle.message_event.set()
        self._refuse(None if answered else ProtocolRefusal(408, "request_timeout", why))

    def _refuse(self, refusal: ProtocolRefusal | None, headers: dict[str, str] | None = None) -> None:
        """Write the refusal (if any), then close: our side at once, the socket once the client
        has closed or LINGER_SECONDS have passed, so unread request bytes do not turn the close
        into a reset that discards the answer before the client reads it."""
        self._disarm()
        self._unset_keepalive_if_required()
        self._closing = True
        if self.transport.is_closing():
            return
        if refusal is not None:
            self.transport.write(raw_response(refusal.status, refusal.code, refusal.message, headers))
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.transport.resume_reading()
        self.loop.call_later(LINGER_SECONDS, self.transport.close)


def guarded_protocol(limits: ConnectionLimits) -> type[GuardedH11Protocol]:
    """The protocol class to give uvicorn (`http=`), bound to these limits."""
    return type("FirmsiftH11Protocol", (GuardedH11Protocol,), {"limits": limits, "waiting": {}})

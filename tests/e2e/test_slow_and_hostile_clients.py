"""Slow, idle, disconnecting and malformed clients against a real `firmsift api` process, over
raw sockets: every connection ends within its deadline, the connection cap refuses or makes room
cleanly, protocol errors are JSON in the contract's shape, and the log stays quiet."""

from __future__ import annotations

import json
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import UVICORN_PORT, Process, Processes, announced_port, wait_healthy, wait_until
from tests.support.waiting import HANG_SECONDS

pytestmark = pytest.mark.e2e

HEADER_TIMEOUT = 1.0
BODY_TIMEOUT = 1.5
KEEP_ALIVE = 1.0
MAX_CONNECTIONS = 20
# Which deadline closed a connection is told by what the server said as it closed it, not by a
# stopwatch; a connection the server never closes fails at HANG_SECONDS, never timed otherwise.


class Api:
    def __init__(self, process: Process, port: int) -> None:
        self.process, self.port = process, port

    def connect(self) -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=HANG_SECONDS)
        sock.settimeout(HANG_SECONDS)
        return sock

    def exchange(self, data: bytes) -> bytes:
        """Send `data` on a new connection and read until the server closes it."""
        with self.connect() as sock:
            if data:
                sock.sendall(data)
            return read_until_closed(sock)

    def log_lines(self) -> list[dict]:
        lines = []
        for line in self.process.log().splitlines():
            try:
                lines.append(json.loads(line))
            except ValueError:
                lines.append({"level": "RAW", "message": line})
        return lines


def read_until_closed(sock: socket.socket) -> bytes:
    """All the server sends until it closes the connection; a connection it never closes fails
    the test (at HANG_SECONDS)."""
    sock.settimeout(HANG_SECONDS)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except TimeoutError:
        raise AssertionError(f"connection still open after {HANG_SECONDS:g}s; received {received[:200]!r}") from None
    except ConnectionResetError:
        pass
    return received


def responses_in(received: bytes) -> int:
    return received.count(b"HTTP/1.1 ")


def parse(response: bytes) -> tuple[int, dict[str, str], dict]:
    head, _, body = response.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split(" ")[1]), headers, json.loads(body)


def start(tmp_path: Path, *, prefix: tuple[str, ...] = (), **env: str) -> tuple[Processes, Api]:
    processes = Processes(tmp_path, env={
        "FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'firmsift.db'}",
        "FIRMSIFT_HEADER_TIMEOUT": str(HEADER_TIMEOUT),
        "FIRMSIFT_BODY_TIMEOUT": str(BODY_TIMEOUT),
        "FIRMSIFT_KEEP_ALIVE_TIMEOUT": str(KEEP_ALIVE),
        "FIRMSIFT_MAX_CONNECTIONS": str(MAX_CONNECTIONS),
        "FIRMSIFT_LOG_LEVEL": "INFO",
        **env,
    })
    process = processes.start("api", *prefix, sys.executable, "-m", "firmsift.entrypoints.cli.main", "api", "--port", "0")
    port = announced_port(process, UVICORN_PORT)
    wait_healthy(f"http://127.0.0.1:{port}", process)
    return processes, Api(process, port)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    """A process of the test's own, for tests that read its log."""
    processes, started = start(tmp_path)
    try:
        yield started
    finally:
        processes.stop_all()


@pytest.fixture(scope="module")
def shared_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    processes, started = start(tmp_path_factory.mktemp("shared"))
    try:
        yield started
    finally:
        processes.stop_all()


HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
POST_HEAD = b"POST /domains/classify HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"


def test_a_client_sending_nothing_or_a_header_line_at_a_time_is_cut_at_the_header_deadline(shared_api: Api) -> None:
    api = shared_api
    idle = api.exchange(b"")
    with api.connect() as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")
        for line in (b"Host: 127.0.0.1\r\n", b"X-A: 1\r\n", b"X-B: 2\r\n", b"X-C: 3\r\n"):
            time.sleep(HEADER_TIMEOUT / 3)  # each line well inside the deadline, the whole head not
            try:
                sock.sendall(line)
            except (BrokenPipeError, ConnectionResetError):
                break
        trickled = read_until_closed(sock)
    for response in (idle, trickled):
        status, headers, body = parse(response)
        assert status == 408 and body["error"]["code"] == "request_timeout", response
        assert headers["content-type"] == "application/json" and headers["connection"] == "close"
        # The head's deadline cut it, the one configured: not the body's, nor the keep-alive's.
        assert body["error"]["message"] == f"request line and headers not received within {HEADER_TIMEOUT:g}s"


def test_a_body_sent_a_byte_at_a_time_is_cut_at_the_body_deadline(api: Api) -> None:
    with api.connect() as sock:
        sock.sendall(POST_HEAD + b"Content-Length: 40\r\n\r\n{")
        for _ in range(6):
            time.sleep(BODY_TIMEOUT / 4)
            try:
                sock.sendall(b" ")
            except (BrokenPipeError, ConnectionResetError):
                break
        response = read_until_closed(sock)
    status, _, body = parse(response)
    assert status == 408 and body["error"]["code"] == "request_timeout"
    # The body's deadline cut it, the one configured, however the bytes kept coming.
    assert body["error"]["message"] == f"request body not received within {BODY_TIMEOUT:g}s"
    # The app saw the client go: no error, no traceback for it.
    assert not [line for line in api.log_lines() if line["level"] in ("ERROR", "RAW") or "exception" in line]


def test_an_unread_body_trickling_after_an_early_answer_is_cut_too(shared_api: Api) -> None:
    api = shared_api
    """A 415 is answered before the body is read; the rest of the body must not hold the connection."""
    with api.connect() as sock:
        sock.sendall(b"POST /domains/classify HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n"
                     b"Content-Length: 40\r\n\r\n{")
        response = read_until_closed(sock)  # the server closes it: held open, the test fails
    assert response.startswith(b"HTTP/1.1 415")
    assert responses_in(response) == 1


def test_an_idle_keep_alive_connection_is_closed_after_the_keep_alive_timeout(shared_api: Api) -> None:
    api = shared_api
    with api.connect() as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        response = read_until_closed(sock)  # the server closes it: held open, the test fails
    assert response.startswith(b"HTTP/1.1 200")
    # Closed quietly, as an idle keep-alive connection is: no 408 for a request never begun.
    assert responses_in(response) == 1


def test_over_the_cap_the_longest_waiting_slow_client_makes_room_and_healthz_still_answers(api: Api) -> None:
    slow = [api.connect() for _ in range(MAX_CONNECTIONS + 10)]
    try:
        for sock in slow:
            sock.sendall(b"GET /healthz HTTP/1.1\r\n")  # a head that will never be finished
        response = api.exchange(HEALTHZ)
        assert response.startswith(b"HTTP/1.1 200"), response
        # The ones that made room were told why.
        evicted = []
        for sock in slow[:10]:
            evicted.append(parse(read_until_closed(sock))[2]["error"]["code"])
        assert set(evicted) == {"too_many_connections"}
    finally:
        for sock in slow:
            sock.close()


def test_over_the_cap_with_every_connection_mid_request_a_new_one_is_refused_cleanly(api: Api) -> None:
    uploads = [api.connect() for _ in range(MAX_CONNECTIONS)]
    try:
        for sock in uploads:
            sock.sendall(POST_HEAD + b"Content-Length: 40\r\n\r\n{")  # mid-body: not a connection to evict
        time.sleep(0.3)  # for the server to read the heads: a connection still in its head could be evicted
        status, headers, body = parse(api.exchange(HEALTHZ))
        # Refused at once, with a 503 that says why: not held until an upload ends.
        assert status == 503 and body["error"]["code"] == "too_many_connections" and headers["retry-after"] == "1"
        # The uploads are cut at their deadline, and once they have hung up (the server's side
        # lingers until then), the server takes connections again.
        for sock in uploads:
            assert parse(read_until_closed(sock))[2]["error"]["message"] == (
                f"request body not received within {BODY_TIMEOUT:g}s")
            sock.close()
        wait_until(lambda: api.exchange(HEALTHZ).startswith(b"HTTP/1.1 200"), HANG_SECONDS,
                   "the server did not take connections again")
    finally:
        for sock in uploads:
            sock.close()


def test_at_the_descriptor_limit_a_flood_is_refused_without_a_flood_of_log_lines(tmp_path: Path) -> None:
    """300 connections at once against a process allowed 700 descriptors: the cap is lowered to
    what the limit leaves room for, the excess gets 503, and accept() never runs out (the
    attack's 87,466 'Too many open files' lines)."""
    processes, api = start(tmp_path, prefix=("prlimit", "--nofile=700:700"), FIRMSIFT_MAX_CONNECTIONS="1000",
                           FIRMSIFT_HEADER_TIMEOUT="30")
    try:
        flood = [api.connect() for _ in range(300)]
        time.sleep(1)
        refused = 0
        for sock in flood:
            sock.setblocking(False)
            try:
                refused += b" 503 " in sock.recv(100)
            except BlockingIOError:
                pass
        response = api.exchange(HEALTHZ)  # room is made: the flood is only waiting for its heads
        lines = api.log_lines()
        for sock in flood:
            sock.close()
    finally:
        processes.stop_all()
    assert response.startswith(b"HTTP/1.1 200")
    assert any("FIRMSIFT_MAX_CONNECTIONS=1000 lowered to" in line["message"] for line in lines)
    assert refused > 0
    assert not [line for line in lines if "out of system resource" in line["message"]
                or "Too many open files" in json.dumps(line)]
    assert len(lines) < 60, len(lines)


def test_a_repeated_warning_is_logged_a_bounded_number_of_times(api: Api) -> None:
    for _ in range(200):
        api.exchange(b"\x16\x03\x01 not http\r\n\r\n")
    # Only the repeated warning: a fresh database file is announced once, at start-up.
    lines = [line for line in api.log_lines() if line["level"] == "WARNING" and line["logger"] == "uvicorn.error"]
    assert 1 <= len(lines) <= 20, len(lines)


def test_a_client_that_hangs_up_mid_body_is_not_an_internal_error(api: Api) -> None:
    for _ in range(5):
        with api.connect() as sock:
            sock.sendall(POST_HEAD + b"Content-Length: 400\r\n\r\n{\"domains\": [")
            time.sleep(0.1)
    time.sleep(0.5)
    assert api.exchange(HEALTHZ).startswith(b"HTTP/1.1 200")
    noisy = [line for line in api.log_lines() if line["level"] in ("ERROR", "WARNING", "RAW") or "exception" in line]
    assert [line for line in noisy if line["message"] != "creating a new database"] == []  # that one: at start


MALFORMED = {
    "content-length abc": (POST_HEAD + b"Content-Length: abc\r\n\r\n{}", 400, "bad_content_length"),
    "content-length -1": (POST_HEAD + b"Content-Length: -1\r\n\r\n{}", 400, "bad_content_length"),
    "content-length 1e3": (POST_HEAD + b"Content-Length: 1e3\r\n\r\n{}", 400, "bad_content_length"),
    "content-length 0x10": (POST_HEAD + b"Content-Length: 0x10\r\n\r\n{}", 400, "bad_content_length"),
    "content-length 21 digits": (POST_HEAD + b"Content-Length: " + b"9" * 21 + b"\r\n\r\n{}", 400,
                                 "bad_content_length"),
    "content-length twice, different": (POST_HEAD + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", 400,
                                        "bad_content_length"),
    "content-length 20 digits": (POST_HEAD + b"Content-Length: " + b"9" * 20 + b"\r\n\r\n{}", 413, "body_too_large"),
    "chunk size not hex": (POST_HEAD + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", 400,
                           "malformed_chunked_body"),
    "chunk size negative": (POST_HEAD + b"Transfer-Encoding: chunked\r\n\r\n-2\r\n{}\r\n0\r\n\r\n", 400,
                            "malformed_chunked_body"),
    "TE gzip, chunked": (POST_HEAD + b"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501,
                         "unsupported_transfer_encoding"),
    "garbage request line": (b"\x00\x01\x02 garbage\r\n\r\n", 400, "malformed_request"),
    "no version": (b"GET /healthz\r\n\r\n", 400, "malformed_request"),
    "header without colon": (b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nnonsense\r\n\r\n", 400, "malformed_request"),
    "10,000 headers": (b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                       + b"".join(b"X-%d: a\r\n" % i for i in range(10000)) + b"\r\n", 431, "headers_too_large"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_request_gets_the_contracts_json_error(shared_api: Api, case: str) -> None:
    data, expected_status, expected_code = MALFORMED[case]
    with shared_api.connect() as sock:
        sock.sendall(data)
        sock.settimeout(10)
        received = b""
        while b"\r\n\r\n" not in received or len(received.partition(b"\r\n\r\n")[2]) < int(
                parse_length(received)):
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
    status, headers, body = parse(received)
    assert (status, body["error"]["code"]) == (expected_status, expected_code), received
    assert headers["content-type"] == "application/json"
    assert set(body["error"]) == {"code", "message", "details"}


def parse_length(received: bytes) -> int:
    for line in received.partition(b"\r\n\r\n")[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 1 << 30


UPLOAD_IDLE = 2.0
MIN_UPLOAD_RATE = 2000  # bytes a second


@pytest.fixture(scope="module")
def upload_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    processes, started = start(tmp_path_factory.mktemp("uploads"), FIRMSIFT_UPLOAD_IDLE_TIMEOUT=str(UPLOAD_IDLE),
                               FIRMSIFT_MIN_UPLOAD_RATE=str(MIN_UPLOAD_RATE), FIRMSIFT_PRECHECK="false")
    try:
        yield started
    finally:
        processes.stop_all()


def _upload_head(length: int) -> bytes:
    return (b"POST /batches?column=domain HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/csv\r\n"
            b"Connection: close\r\nContent-Length: %d\r\n\r\n" % length)


def test_an_upload_arriving_steadily_for_longer_than_the_body_deadline_is_accepted(upload_api: Api) -> None:
    # Four times the body deadline at 10 times the rate floor: a whole-body deadline cut this at 1.5 s.
    rows = b"domain\r\n" + b"".join(b"site%05d.example.com\r\n" % n for n in range(2400))
    pieces = [rows[i:i + 2000] for i in range(0, len(rows), 2000)]
    with upload_api.connect() as sock:
        sock.sendall(_upload_head(len(rows)))
        stop = time.monotonic() + 4 * BODY_TIMEOUT
        for number, piece in enumerate(pieces):
            sock.sendall(piece)
            time.sleep(max(0.0, (stop - time.monotonic()) / (len(pieces) - number)))
        response = read_until_closed(sock)
    status, _, body = parse(response)
    assert status == 202, body
    assert (body["total"], body["accepted"]) == (2400, 2400)


def test_an_upload_that_stops_is_cut_at_the_idle_deadline(upload_api: Api) -> None:
    with upload_api.connect() as sock:
        start_of_body = b"domain\r\n" + b"a.com\r\n" * 2000  # 14 KB: above the rate floor for 7 s
        sock.sendall(_upload_head(2 * len(start_of_body)) + start_of_body)
        response = read_until_closed(sock)
    status, _, body = parse(response)
    assert status == 408 and "no byte of the request body" in body["error"]["message"], body


def test_an_upload_dripping_bytes_to_hold_its_connection_is_cut_for_its_rate(upload_api: Api) -> None:
    with upload_api.connect() as sock:
        sock.sendall(_upload_head(100_000) + b"domain\r\n")
        for _ in range(int(6 * BODY_TIMEOUT / (UPLOAD_IDLE / 4))):  # a byte well within each idle deadline
            time.sleep(UPLOAD_IDLE / 4)
            try:
                sock.sendall(b"a")
            except (BrokenPipeError, ConnectionResetError):
                break
        response = read_until_closed(sock)
    status, _, body = parse(response)
    assert status == 408 and "slower than 2000 bytes a second" in body["error"]["message"], body

"""A real loopback HTTP server speaking SearXNG, Tavily and Brave JSON and serving scripted pages.

In tests:

    with FakeSearchServer() as server:
        server.script("acme.com", [{"url": ..., "title": ..., "content": ...}])
        SearxngSearch(server.base_url) ...
        server.requests[-1].headers["x-subscription-token"]
        server.override = load_fixture("searxng-json-format-disabled")  # a real provider's answer

As a process (for end-to-end tests): `python -m tests.support.fake_search_server --port 0`
prints the port it listens on, alone on one line, then serves until terminated; `--replay NAME`
answers every search API request with the recorded answer NAME.
"""

from __future__ import annotations

import argparse
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support.loopback_http import NoDelayHandler, ServerThread

SEARCH_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "providers" / "search"


@dataclass(frozen=True)
class ReceivedRequest:
    """One request as the server saw it; header names are lower-cased."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Reply:
    """A canned HTTP answer: a page, a redirect, or an error that overrides the search APIs."""

    status: int = 200
    body: bytes = b""
    content_type: str = "text/html; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)
    endless: bool = False  # stream body forever (until the client hangs up)
    cut_short: bool = False  # announce a longer body than is sent, then hang up


def load_fixture(name: str) -> Reply:
    """A real search provider's recorded answer (tests/fixtures/providers/search/NAME.json) as a
    Reply: the same status, headers and body (a JSON body re-encoded, a text body as it came)."""
    recorded = json.loads((SEARCH_FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    headers = {key.lower(): value for key, value in recorded.get("headers", {}).items()}
    for own in ("server", "date", "connection", "content-length"):  # the fake sends its own
        headers.pop(own, None)
    content_type = headers.pop("content-type", "application/json")
    body = recorded["body"]
    encoded = body.encode("utf-8") if isinstance(body, str) else json.dumps(body).encode("utf-8")
    return Reply(status=recorded["status"], body=encoded, content_type=content_type, headers=headers)


def default_results(query: str) -> list[dict[str, str]]:
    """Deterministic results for an unscripted query, about the domain it names."""
    quoted = re.search(r'"([^"]+)"', query)
    dotted = re.search(r"[\w-]+(?:\.[\w-]+)+", query)
    domain = quoted.group(1) if quoted else dotted.group(0) if dotted else query.strip()
    return [
        {
            "url": f"https://{domain}/about",
            "title": f"{domain} — about",
            "content": f"About {domain}: who runs {domain} and what {domain} makes and sells.",
        }
    ]


class FakeSearchServer:
    """Loopback server on a free port; results are scripted per query and requests recorded."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, delay: float = 0.0, keep_alive: bool = False) -> None:
        self.delay = delay
        # Real search APIs keep connections open (HTTP/1.1); by default each answer closes its
        # connection (HTTP/1.0), so a test that stops the server leaves no client holding one.
        self.keep_alive = keep_alive
        self.requests: list[ReceivedRequest] = []
        self.override: Reply | None = None  # when set, every search API answers with it
        self._scripted: dict[str, list[dict[str, str]]] = {}
        self._pages: dict[tuple[str, str], Reply] = {}
        self._lock = threading.Lock()
        self._server = ServerThread(host, port, _handler_for(self), name="fake-search")

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, query_part: str, results: list[dict[str, str]]) -> None:
        """Answer any query containing `query_part` with `results` (dicts of url/title/content)."""
        self._scripted[query_part] = results

    def results_for(self, query: str) -> list[dict[str, str]]:
        for part, results in self._scripted.items():
            if part in query:
                return results
        return default_results(query)

    def add_page(self, host: str, path: str, reply: Reply) -> None:
        """Serve `reply` for GET `path` when the Host header names `host` (port ignored)."""
        self._pages[(host.lower(), path)] = reply

    def add_html(self, host: str, path: str, html: str) -> None:
        self.add_page(host, path, Reply(body=html.encode("utf-8")))

    def add_redirect(self, host: str, path: str, location: str, status: int = 302) -> None:
        self.add_page(host, path, Reply(status=status, headers={"Location": location}))

    def page(self, host: str, path: str) -> Reply | None:
        return self._pages.get((host.lower(), path))

    def record(self, request: ReceivedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    @property
    def stopping(self) -> bool:
        return self._server.stopping.is_set()

    def pause(self) -> None:
        """Wait `delay` seconds, cut short when the server stops."""
        if self.delay:
            self._server.stopping.wait(self.delay)

    def start(self) -> FakeSearchServer:
        self._server.start()
        return self

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted (the standalone process)."""
        self._server.serve_forever()

    def stop(self) -> None:
        self._server.stop()

    def __enter__(self) -> FakeSearchServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _handler_for(server: FakeSearchServer) -> type[BaseHTTPRequestHandler]:
    class Handler(NoDelayHandler):
        protocol_version = "HTTP/1.1" if server.keep_alive else "HTTP/1.0"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
            pass  # keep test output and the e2e process quiet

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def _serve(self, method: str) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            request = ReceivedRequest(
                method=method,
                path=parts.path,
                query={key: values[0] for key, values in parse_qs(parts.query).items()},
                headers={name.lower(): value for name, value in self.headers.items()},
                body=self.rfile.read(length) if length else b"",
            )
            server.record(request)
            server.pause()
            try:
                self._send(self._answer(request))
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout, size limit): expected in tests

        def _answer(self, request: ReceivedRequest) -> Reply:
            api = self._search_api(request)
            if api is not None and server.override is not None:
                return server.override
            if api == "searxng":
                query = request.query.get("q", "")
                return _json(searxng_answer(query, server.results_for(query)))
            if api == "tavily":
                query = request.json().get("query", "")
                limit = int(request.json().get("max_results", 5))
                return _json(tavily_answer(query, server.results_for(query)[:limit]))
            if api == "brave":
                query = request.query.get("q", "")
                limit = int(request.query.get("count", 20))
                return _json(brave_answer(query, server.results_for(query)[:limit]))
            host = request.headers.get("host", "").rsplit(":", 1)[0]
            page = server.page(host, request.path)
            return page or Reply(status=404, body=b"<h1>not found</h1>")

        @staticmethod
        def _search_api(request: ReceivedRequest) -> str | None:
            if request.path == "/search" and request.method == "POST":
                return "tavily"
            if request.path == "/search" and request.query.get("format") == "json":
                return "searxng"
            if request.path == "/res/v1/web/search":
                return "brave"
            return None

        def _send(self, reply: Reply) -> None:
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            for name, value in reply.headers.items():
                # As UTF-8, so a test can send the non-ASCII header values a hostile server would.
                self._headers_buffer.append(f"{name}: {value}\r\n".encode("utf-8", "surrogatepass"))
            if not reply.endless:
                self.send_header("Content-Length", str(len(reply.body) * (2 if reply.cut_short else 1)))
            if reply.endless or reply.cut_short:
                self.close_connection = True  # its end is the connection's
            self.end_headers()
            self.wfile.write(reply.body)
            while reply.endless and not server.stopping:
                self.wfile.write(b"<p>" + b"more " * 2000 + b"</p>\n")

    return Handler


def searxng_answer(query: str, results: list[dict[str, str]]) -> dict[str, Any]:
    """SearXNG's JSON answer (searx/webutils.py get_json_response), with each result's fields as
    a real instance sends them (tests/fixtures/providers/search/searxng-results.json)."""
    return {
        "query": query,
        "results": [{**result, "engine": "fake", "engines": ["fake"], "positions": [rank],
                     "score": 1.0 / rank, "category": "general", "template": "default.html",
                     "publishedDate": None} for rank, result in enumerate(results, start=1)],
        "answers": [], "corrections": [], "infoboxes": [], "suggestions": [], "unresponsive_engines": [],
    }


def tavily_answer(query: str, results: list[dict[str, str]]) -> dict[str, Any]:
    """Tavily's /search answer (tests/fixtures/providers/search/tavily-results.json)."""
    return {"query": query, "follow_up_questions": None, "answer": None, "images": [],
            "results": [{**result, "score": 0.9, "raw_content": None} for result in results],
            "response_time": 0.5}


def brave_answer(query: str, results: list[dict[str, str]]) -> dict[str, Any]:
    """Brave's web search answer (tests/fixtures/providers/search/brave-results.json): the
    snippet is `description`, and results live under `web`."""
    web = [{"type": "search_result", "subtype": "generic", "url": r["url"], "title": r["title"],
            "description": r["content"], "language": "en", "family_friendly": True}
           for r in results]
    return {"type": "search", "query": {"original": query},
            "web": {"type": "search", "family_friendly": True, "results": web}}


def _json(payload: object) -> Reply:
    return Reply(body=json.dumps(payload).encode(), content_type="application/json")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to wait per request")
    parser.add_argument("--keep-alive", action="store_true", help="keep connections open, as real search APIs do")
    parser.add_argument("--replay", metavar="FIXTURE",
                        help="answer every search API request with a recorded provider answer "
                             "from tests/fixtures/providers/search (e.g. searxng-json-format-disabled)")
    args = parser.parse_args(argv)
    server = FakeSearchServer(host=args.host, port=args.port, delay=args.delay, keep_alive=args.keep_alive)
    if args.replay:
        server.override = load_fixture(args.replay)
    print(server.port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()

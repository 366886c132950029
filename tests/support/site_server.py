"""A loopback web server for the pre-check: pages per host name (fixtures of tests/fixtures/sites,
redirects, slow and huge pages), for homepage readers pinned to it like curl --resolve does."""

from __future__ import annotations

from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

from tests.support.loopback_http import ServerThread
from tests.support.site_fixtures import SITES, load


@dataclass
class Page:
    """What a host answers at any path: a status, headers and a body, after `delay` seconds."""

    status: int = 200
    headers: tuple[tuple[str, str], ...] = (("Content-Type", "text/html; charset=utf-8"),)
    body: bytes = b""
    delay: float = 0.0


def redirect(location: str, status: int = 301) -> Page:
    return Page(status=status, headers=(("Location", location), ("Content-Type", "text/html")))


def fixture_page(name: str) -> tuple[str, Page]:
    """(the case's domain, its homepage as the fixture describes it: status, headers, body)."""
    case = load(name)
    raw = case["http"]
    headers = tuple((str(n), str(v)) for n, v in raw.get("headers", []))
    if not any(n.lower() == "content-type" for n, _ in headers):
        headers += (("Content-Type", "text/html; charset=utf-8"),)
    body = (SITES / raw["body_file"]).read_bytes() if "body_file" in raw else b""
    return str(case["domain"]), Page(status=raw["status"], headers=headers, body=body)


@dataclass
class SiteServer:
    """Serves `pages` (host -> Page) on 127.0.0.1; `requests` lists (host, path) as received."""

    pages: dict[str, Page] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server interface
                host = (self.headers.get("Host") or "").rsplit(":", 1)[0].lower()
                server.requests.append((host, self.path))
                page = server.pages.get(host, Page(status=404, body=b"<title>no such site</title>"))
                if page.delay and server.thread.stopping.wait(page.delay):
                    return
                self.send_response(page.status)
                for name, value in page.headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(page.body)))
                self.end_headers()
                try:
                    self.wfile.write(page.body)
                except (BrokenPipeError, ConnectionResetError):  # the reader stopped at its limit
                    pass

            def log_message(self, *_: object) -> None:
                pass

        self.thread = ServerThread("127.0.0.1", 0, Handler, "site-server")

    @property
    def port(self) -> int:
        return self.thread.port

    def pinned(self, *hosts: str) -> dict[str, tuple[str, int | None]]:
        """FIRMSIFT_HOMEPAGE_RESOLVE for `hosts` (all served pages when none named)."""
        return {host: ("127.0.0.1", self.port) for host in (hosts or self.pages)}

    def resolve_setting(self) -> str:
        return ",".join(f"{host}=127.0.0.1:{self.port}" for host in self.pages)

    def __enter__(self) -> SiteServer:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.thread.stop()


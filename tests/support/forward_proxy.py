"""An outbound HTTP proxy on loopback, as a proxied corporate network has one: absolute-form
requests (`GET http://host/ HTTP/1.1`) are forwarded to a SiteServer for the host names it knows,
and answered 502 for the others, as a real proxy answers a name it cannot resolve; CONNECT (https)
is refused with 502, as for a site without TLS. `requests` lists (method, target) as received."""

from __future__ import annotations

import http.client
from collections.abc import Collection
from http.server import BaseHTTPRequestHandler
from urllib.parse import urlsplit

from tests.support.loopback_http import ServerThread


class ForwardProxy:
    def __init__(self, site_port: int, known_hosts: Collection[str]) -> None:
        self.requests: list[tuple[str, str]] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_CONNECT(self) -> None:  # noqa: N802 - the http.server interface
                proxy.requests.append(("CONNECT", self.path))
                self._answer(502, b"no TLS here")

            def do_GET(self) -> None:  # noqa: N802
                proxy.requests.append(("GET", self.path))
                target = urlsplit(self.path)
                if target.hostname not in known_hosts:
                    self._answer(502, b"proxy: cannot resolve " + (target.hostname or "").encode())
                    return
                upstream = http.client.HTTPConnection("127.0.0.1", site_port, timeout=30)
                try:
                    upstream.request("GET", target.path or "/", headers={"Host": target.netloc})
                    reply = upstream.getresponse()
                    body = reply.read()
                    self.send_response(reply.status)
                    for name, value in reply.getheaders():
                        if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                            self.send_header(name, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(body)
                finally:
                    upstream.close()

            def _answer(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: object) -> None:
                pass

        self.thread = ServerThread("127.0.0.1", 0, Handler, "forward-proxy")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.thread.port}"

    def __enter__(self) -> ForwardProxy:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.thread.stop()

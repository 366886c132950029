"""The threaded HTTP server the fake providers run on, and its life on a background thread."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LoopbackServer(ThreadingHTTPServer):
    """A threaded server whose listen backlog holds a burst of concurrent callers: the default of
    5 drops connection attempts past it, and each dropped one waits a second for the SYN retry."""

    daemon_threads = True
    request_queue_size = 1024


class NoDelayHandler(BaseHTTPRequestHandler):
    """A handler whose writes go out at once (TCP_NODELAY): a response's headers and body are two
    writes, and on a kept-alive connection Nagle holds the body until the client's delayed ACK
    (40 ms a request)."""

    disable_nagle_algorithm = True


class ServerThread:
    """A LoopbackServer served on a daemon thread (or in the calling thread, standalone).
    `stopping` is set by stop(), so handlers sleeping on a scripted delay wake up at once."""

    def __init__(self, host: str, port: int, handler: type[BaseHTTPRequestHandler], name: str) -> None:
        self.httpd = LoopbackServer((host, port), handler)
        self.stopping = threading.Event()
        self.name = name
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    def start(self) -> None:
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.stopping.set()
        if self._thread is not None:  # shutdown() would wait forever for a loop never started
            self.httpd.shutdown()
            self._thread.join(timeout=5)
        self.httpd.server_close()

    def serve_forever(self) -> None:
        """Serve in the calling thread until interrupted (the standalone process)."""
        try:
            self.httpd.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            self.httpd.server_close()

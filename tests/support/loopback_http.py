"""The threaded HTTP server the fake providers run on."""

from __future__ import annotations

from http.server import ThreadingHTTPServer


class LoopbackServer(ThreadingHTTPServer):
    """A threaded server whose listen backlog holds a burst of concurrent callers: the default of
    5 drops connection attempts past it, and each dropped one waits a second for the SYN retry."""

    daemon_threads = True
    request_queue_size = 1024

"""`firmsift api --workers N`: N API processes accepting on one socket bound here (each copy
serves as wiring/serving.py says)."""

from __future__ import annotations

import logging

from firmsift.entrypoints.cli.process_group import ProcessGroup
from firmsift.entrypoints.cli.scale_out import api_copies, listening_socket
from firmsift.entrypoints.settings import Settings
from firmsift.entrypoints.wiring.serving import ACCEPT_BACKLOG


def serve_copies(settings: Settings, host: str, port: int, count: int) -> int:
    """`firmsift api --workers N`: N API processes accepting on one socket bound here."""
    listener = listening_socket(host, port, ACCEPT_BACKLOG)
    with listener:
        port = listener.getsockname()[1]
        logging.getLogger(__name__).info(f"serving http://{host}:{port} from {count} processes")
        return ProcessGroup(api_copies(host, port, listener, count),
                            grace_seconds=settings.shutdown_grace_seconds).run_until_signalled()

"""How many requests a local LLM server answers at once, as the server itself reports it.

llama.cpp's server says so as `total_slots` at GET /props, beside its /v1 routes; other local
servers (llama-cpp-python, Ollama, LM Studio) say nothing there. Asked once when a worker starts,
so that its LLM calls wait in the worker's own queue, where no time limit runs, and not in the
server's, where each call's time limit runs out behind the others."""

from __future__ import annotations

import json

import httpx

MAX_PROPS_BYTES = 1 << 20  # /props holds the chat template: tens of KB; more is not a props document
PROBE_SECONDS = 3.0


def served_slots(api_base: str, *, timeout: float = PROBE_SECONDS) -> int | None:
    """The server's `total_slots`, or None when it does not say (no /props, not JSON, not
    answering, a body over MAX_PROPS_BYTES)."""
    root = api_base.rstrip("/")
    root = root[: -len("/v1")] if root.endswith("/v1") else root
    try:
        # trust_env off: a server on this machine or network is never reached through a proxy.
        with httpx.Client(timeout=timeout, trust_env=False) as client, client.stream("GET", f"{root}/props") as reply:
            if reply.status_code != 200:
                return None
            body = bytearray()
            for chunk in reply.iter_bytes():
                body += chunk
                if len(body) > MAX_PROPS_BYTES:
                    return None
        slots = json.loads(body).get("total_slots")
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return slots if isinstance(slots, int) and not isinstance(slots, bool) and 1 <= slots <= 1024 else None

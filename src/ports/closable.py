"""The Closable port: an implementation holding a client or connection that its user closes when done."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class Closable(Protocol):
    """A port implementation that holds something to let go of (an HTTP client, a transport).
    Not every implementation of a port holds one, so callers ask `isinstance(x, Closable)`;
    a port decorator is Closable and closes what it wraps."""

    async def aclose(self) -> None:
        """Let go of what it holds."""

"""aclose() for the port decorators (retries, rate budgets, metrics): closing one closes what it wraps."""

from __future__ import annotations

from typing import Any

from firmsift.ports.closable import Closable


class ClosesInner:
    """aclose() for a port decorator: closes the port it wraps, when that one is Closable."""

    inner: Any

    async def aclose(self) -> None:
        if isinstance(self.inner, Closable):
            await self.inner.aclose()

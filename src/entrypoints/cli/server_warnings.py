"""What the API says may stop a job or batch from progressing (`warning`: no worker can run, and
the fix), shown on stderr the first time it is seen, not after the run has waited for nothing."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any, TextIO


class ServerWarnings:
    def __init__(self, stream: TextIO | None = None) -> None:
        self._stream = stream
        self._shown: set[str] = set()

    def see(self, document: Mapping[str, Any]) -> None:
        warning = document.get("warning")
        if isinstance(warning, str) and warning and warning not in self._shown:
            self._shown.add(warning)
            print(f"firmsift: the API warns: {warning}", file=self._stream or sys.stderr, flush=True)

"""Short excerpts of long text (provider messages, raw model output), cut between words, never inside one."""

from __future__ import annotations

ELLIPSIS = "…"


def excerpt(text: str, limit: int) -> str:
    """`text` on one line, whitespace collapsed, at most `limit` characters: cut at the last space
    before the limit and marked with an ellipsis. A single word longer than the limit is cut
    inside it only because there is no space to cut at."""
    one_line = " ".join(text.split())
    if len(one_line) <= limit:
        return one_line
    room = max(limit - len(ELLIPSIS), 1)
    cut = one_line.rfind(" ", 0, room + 1)
    head = one_line[:cut] if cut > 0 else one_line[:room]
    return head.rstrip(" ,;:") + ELLIPSIS

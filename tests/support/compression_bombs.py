"""Compressed bodies that inflate far beyond their size (gzip, zlib and raw deflate), built in bounded memory."""

from __future__ import annotations

import functools
import zlib

_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS, "raw-deflate": -zlib.MAX_WBITS}
_BLOCK = 1 << 20


@functools.cache
def bomb(encoding: str, inflated_bytes: int, *, prefix: bytes = b"", suffix: bytes = b"",
         fill: bytes = b"\0") -> bytes:
    """`prefix`, then `fill` repeated up to `inflated_bytes`, then `suffix`, compressed as
    `encoding` (gzip, deflate = zlib-wrapped as HTTP means it, raw-deflate as some servers send
    it). 200 MB of one repeated byte compress to about 200 KB; the input is fed a megabyte at a
    time so building it stays small."""
    packer = zlib.compressobj(9, zlib.DEFLATED, _WBITS[encoding])
    parts = [packer.compress(prefix)]
    left = inflated_bytes - len(prefix) - len(suffix)
    block = fill * (_BLOCK // len(fill))
    while left > 0:
        parts.append(packer.compress(block[: min(left, len(block))]))
        left -= len(block)
    parts.append(packer.compress(suffix))
    parts.append(packer.flush())
    return b"".join(parts)


def compressed(encoding: str, data: bytes) -> bytes:
    """`data` compressed as `encoding` (gzip, deflate, raw-deflate): an honest compressed body."""
    packer = zlib.compressobj(6, zlib.DEFLATED, _WBITS[encoding])
    return packer.compress(data) + packer.flush()

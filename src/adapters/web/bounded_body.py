"""Reading an untrusted HTTP response body within limits on its decoded size and compression ratio."""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import httpx

# The encodings this reader decodes itself; a client should advertise these and no others.
ACCEPT_ENCODING = "gzip, deflate"
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


class UnreadableBody(Exception):
    """The body was refused: too large, inflating like a compression bomb, or in an encoding
    this reader does not decode. The message names such a body ("a body larger than ..."), without
    quoting it, for a caller to say who answered it."""


@dataclass(frozen=True)
class BodyLimits:
    """`max_bytes` bounds the decoded body and the bytes read from the wire alike. Past
    `ratio_floor` decoded bytes, a body that inflates more than `max_ratio` times the
    compressed bytes it came from is refused as a compression bomb (ordinary HTML and JSON
    compress 3-20 times; a bomb of zeros about 1,000)."""

    max_bytes: int
    max_ratio: int = 100
    ratio_floor: int = 64 * 1024


async def read_body(response: httpx.Response, limits: BodyLimits, *, cut: bool) -> bytes:
    """The decoded body of a streamed response, inflated a bounded piece at a time so that
    memory never holds more than `max_bytes` of it (plus one network read).

    Past `max_bytes`, `cut` returns the first `max_bytes` (a page the parser can read in
    part) and otherwise raises UnreadableBody (a JSON document cut short is useless). The
    response is read raw, so httpx's own decoders, which inflate a whole network read at
    once, never run."""
    decoder = _decoder_for(response.headers.get("content-encoding", ""))
    body = bytearray()
    wire = 0
    async for chunk in response.aiter_raw():
        wire += len(chunk)
        room = limits.max_bytes - len(body)
        body += decoder.feed(chunk, room + 1)  # one byte more than fits shows an overflow
        _check_ratio(decoder, len(body), limits)
        if len(body) > limits.max_bytes or wire > limits.max_bytes or decoder.finished:
            break
    if len(body) > limits.max_bytes or wire > limits.max_bytes:
        if not cut:
            raise UnreadableBody(f"a body larger than {limits.max_bytes:,} bytes")
        del body[limits.max_bytes :]
    return bytes(body)


def _check_ratio(decoder: _Decoder, decoded: int, limits: BodyLimits) -> None:
    if decoded >= limits.ratio_floor and decoded > limits.max_ratio * max(decoder.consumed, 1):
        raise UnreadableBody(
            f"a body inflating more than {limits.max_ratio}:1 "
            f"({decoder.consumed:,} compressed bytes gave {decoded:,}): a compression bomb"
        )


class _Decoder:
    """Identity: bytes pass through, each one counted as consumed."""

    finished = False

    def __init__(self) -> None:
        self.consumed = 0

    def feed(self, data: bytes, max_out: int) -> bytes:
        self.consumed += len(data)
        return data[:max_out]


class _Inflater(_Decoder):
    """gzip or deflate, inflated at most `max_out` bytes per feed. HTTP's deflate is meant to be
    zlib-wrapped, but some servers send raw deflate: as browsers do, the raw form is tried when
    the first bytes are not a zlib header."""

    def __init__(self, encoding: str) -> None:
        super().__init__()
        self._encoding = encoding
        self._inflate = zlib.decompressobj(_WBITS[encoding])
        self._started = False

    def feed(self, data: bytes, max_out: int) -> bytes:
        try:
            out = self._inflate.decompress(data, max_out)
        except zlib.error as error:
            if self._encoding != "deflate" or self._started:
                raise UnreadableBody(f"a body that is not valid {self._encoding} ({error})") from None
            self._inflate = zlib.decompressobj(-zlib.MAX_WBITS)
            return self.feed(data, max_out)
        self._started = True
        # What zlib kept back (output full) or left over (past the end) was not consumed.
        self.consumed += len(data) - len(self._inflate.unconsumed_tail) - len(self._inflate.unused_data)
        self.finished = self._inflate.eof
        return out


def _decoder_for(content_encoding: str) -> _Decoder:
    codings = [c.strip().lower() for c in content_encoding.split(",")]
    codings = [c for c in codings if c and c != "identity"]
    if not codings:
        return _Decoder()
    if len(codings) > 1:
        raise UnreadableBody(f"a body with stacked content encodings ({', '.join(codings)[:80]})")
    if codings[0] not in _WBITS:
        raise UnreadableBody(f"a body in an unsupported content encoding ({codings[0][:40]!r})")
    return _Inflater(codings[0])

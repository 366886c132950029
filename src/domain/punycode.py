"""Punycode (RFC 3492) encoding that stops as soon as its output passes a length limit."""

from __future__ import annotations

# RFC 3492, 5: parameter values for Punycode.
_BASE, _TMIN, _TMAX, _SKEW, _DAMP, _INITIAL_BIAS, _INITIAL_N = 36, 1, 26, 38, 700, 72, 128
_DIGITS = "abcdefghijklmnopqrstuvwxyz0123456789"


def encode_within(label: str, limit: int) -> str | None:
    """The Punycode of `label` (without the `xn--` prefix), or None once it would be longer than
    `limit` characters. The stdlib codec always encodes the whole label, in time quadratic in its
    distinct code points (~1 ms for 59 CJK characters); a label whose encoding cannot fit in a
    DNS label is abandoned after the first characters past the limit instead."""
    codes = [ord(char) for char in label]
    output = [char for char in label if ord(char) < _INITIAL_N]
    basic = len(output)
    if basic:
        output.append("-")
    if len(output) > limit:
        return None
    n, delta, bias, handled = _INITIAL_N, 0, _INITIAL_BIAS, basic
    for m in sorted({code for code in codes if code >= _INITIAL_N}):
        delta += (m - n) * (handled + 1)
        n = m
        for code in codes:
            if code < n:
                delta += 1
            elif code == n:
                _append_number(output, delta, bias)
                if len(output) > limit:
                    return None
                bias = _adapt(delta, handled + 1, first=handled == basic)
                delta = 0
                handled += 1
        delta += 1
        n += 1
    return "".join(output)


def _append_number(output: list[str], q: int, bias: int) -> None:
    """RFC 3492, 6.3: `q` as a generalized variable-length integer."""
    k = _BASE
    while True:
        t = _TMIN if k <= bias else _TMAX if k >= bias + _TMAX else k - bias
        if q < t:
            break
        output.append(_DIGITS[t + (q - t) % (_BASE - t)])
        q = (q - t) // (_BASE - t)
        k += _BASE
    output.append(_DIGITS[q])


def _adapt(delta: int, points: int, *, first: bool) -> int:
    """RFC 3492, 6.1: bias adaptation."""
    delta = delta // _DAMP if first else delta // 2
    delta += delta // points
    k = 0
    while delta > ((_BASE - _TMIN) * _TMAX) // 2:
        delta //= _BASE - _TMIN
        k += _BASE
    return k + (_BASE - _TMIN + 1) * delta // (delta + _SKEW)

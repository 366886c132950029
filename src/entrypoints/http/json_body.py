"""Reading a request's JSON body with the checks the contract promises (type, size, syntax)."""

from __future__ import annotations

import json
import math

from starlette.requests import Request

from firmsift.entrypoints.http.errors import BodyRejected


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


async def read_json_body(request: Request, max_bytes: int) -> object:
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/json":
        raise BodyRejected(415, "unsupported_media_type",
                           f"Content-Type must be application/json, not {content_type or 'missing'}")
    declared = request.headers.get("content-length")
    if declared is not None and not (declared.isascii() and declared.isdigit()):
        raise BodyRejected(400, "bad_content_length", "Content-Length must be a whole number of bytes")
    # Compared by length first: int() refuses more than 4,300 digits (a 500 before this check).
    if declared is not None and (len(declared.lstrip("0")) > len(str(max_bytes)) or int(declared) > max_bytes):
        raise BodyRejected(413, "body_too_large", f"request body is larger than {max_bytes} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise BodyRejected(413, "body_too_large", f"request body is larger than {max_bytes} bytes")
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw.strip():
        raise BodyRejected(400, "malformed_json", "request body is empty; send a JSON object")
    return json_document(raw)


def json_document(raw: bytes) -> object:
    """The JSON value of a request body, by the contract's rules: UTF-8, no NaN or Infinity, no
    number out of range, no unpaired surrogate escape; 400 malformed_json saying why otherwise."""
    try:
        document = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant, parse_float=_finite_float)
        # "\ud800" escapes decode to lone surrogates, which no answer could echo back as UTF-8.
        json.dumps(document, ensure_ascii=False).encode("utf-8")
        return document
    except UnicodeEncodeError:
        raise BodyRejected(400, "malformed_json", "request body contains an unpaired surrogate escape") from None
    except UnicodeDecodeError:
        raise BodyRejected(400, "malformed_json", "request body is not UTF-8") from None
    except RecursionError:
        raise BodyRejected(400, "malformed_json", "request body nests too deeply") from None
    except ValueError as error:
        raise BodyRejected(400, "malformed_json", f"request body is not valid JSON: {error}") from None

"""What the search-API adapters share: the request flow, client ownership, errors, result bounds."""

from __future__ import annotations

import abc
import asyncio
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from firmsift.adapters.web.bounded_body import ACCEPT_ENCODING, BodyLimits, UnreadableBody, read_body
from firmsift.adapters.search.html_evidence import bounded, text_from_fragment
from firmsift.adapters.web.retry_after import retry_after_seconds
from firmsift.domain.errors import ProviderError
from firmsift.domain.model import Evidence

SNIPPET_CHARS = 500
TITLE_CHARS = 200
URL_CHARS = 2048
# Twenty results with their snippets are tens of kilobytes; anything near this is not a result list.
MAX_RESPONSE_BYTES = 2_000_000
ERROR_BODY_BYTES = 64_000  # an error answer is a short JSON object or page
_ERROR_CODE = re.compile(r"[A-Z][A-Z0-9_]{0,63}")
_HINTS = {401: " (check the API key)", 403: " (check the API key)", 429: " (rate limited)"}


class OwnedClient:
    """An httpx.AsyncClient handed in by the caller (left open for the caller to close), or
    created on first use with `options` and closed by aclose(), so that nothing connects at
    import or construction time."""

    def __init__(self, client: httpx.AsyncClient | None, **options: Any) -> None:
        self._client = client
        self._owned = client is None
        self._options = options

    def get(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(**self._options)
        return self._client

    async def aclose(self) -> None:
        if self._owned and self._client is not None:
            await self._client.aclose()
            self._client = None


class SearchApi(abc.ABC):
    """The flow every search-API adapter follows: one request per domain asking what the company
    sells, the result list picked out of the JSON answer, at most max_results bounded Evidence
    made of it. A subclass names its provider, endpoint, snippet field and the provider's own cap
    on results, and says how to ask (`request`) and where the results are (`results`)."""

    name: str
    method: str
    path: str  # of the endpoint, after the base URL
    snippet_key: str  # the result field holding the snippet
    most_results: int | None = None  # the provider's own limit per query, if it has one

    def __init__(self, base_url: str, *, timeout: float = 10.0, max_results: int = 5,
                 client: httpx.AsyncClient | None = None) -> None:
        self._base_url = base_url.rstrip("/")
        self._url = self._base_url + self.path
        self._timeout = timeout
        wanted = max(1, max_results)
        self._max_results = wanted if self.most_results is None else min(wanted, self.most_results)
        self._client = OwnedClient(client)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self._base_url!r})"  # never the API key

    async def gather(self, domain: str) -> list[Evidence]:
        """Up to max_results results about what the company at `domain` sells."""
        body = await request_json(self._client.get(), self.name, self.method, self._url,
                                  timeout=self._timeout, failure=self.failure,
                                  **self.request(search_query(domain)))
        return evidence_from_results(self.name, self.results(body), snippet_key=self.snippet_key,
                                     max_results=self._max_results)

    @abc.abstractmethod
    def request(self, query: str) -> dict[str, Any]:
        """The request's `headers`, and its `params` or `json`, asking the provider `query`."""

    def failure(self, status: int, headers: httpx.Headers, body: Any) -> ProviderError:
        """The error for an answer with HTTP `status` (`body` is its JSON, None when it is not
        JSON); a subclass says what its provider's statuses and error codes mean."""
        return http_failure(self.name, status, headers)

    def results(self, body: Any) -> Any:
        """The result list in the provider's JSON answer (at "results" unless the provider says
        otherwise); ProviderError when the answer has no place for one."""
        return json_at(self.name, body, "results")

    async def aclose(self) -> None:
        """Close the HTTP client if this adapter created it."""
        await self._client.aclose()


async def request_json(
    client: httpx.AsyncClient,
    provider: str,
    method: str,
    url: str,
    *,
    timeout: float,
    headers: Mapping[str, str] | None = None,
    failure: Callable[[int, httpx.Headers, Any], ProviderError],
    **kwargs: Any,
) -> Any:
    """Send one request and return its decoded JSON body.

    Every failure becomes a ProviderError naming the provider. An HTTP failure is what
    `failure(status, headers, json_body_or_None)` makes of it (SearchApi.failure); the
    error body is read within ERROR_BODY_BYTES. Messages are built from the status code, the
    exception type and codes checked against a fixed pattern, never from free text of headers or
    bodies, which could carry (or echo) the API key. Timeouts and lost connections are retryable.
    The body is streamed and inflated a piece at a time: more than MAX_RESPONSE_BYTES of it decoded,
    or a compression bomb, is a ProviderError before it can fill memory."""
    try:
        async with asyncio.timeout(timeout):
            async with client.stream(
                method,
                url,
                timeout=timeout,
                headers={"Accept-Encoding": ACCEPT_ENCODING, **(headers or {})},
                **kwargs,
            ) as response:
                if not response.is_success:
                    status, answered = response.status_code, await _error_body(response)
                    raise failure(status, response.headers, answered)
                body = await read_body(response, BodyLimits(MAX_RESPONSE_BYTES), cut=False)
    except (httpx.TimeoutException, TimeoutError):
        raise ProviderError(f"{provider}: search timed out after {timeout:g}s", retryable=True) from None
    except httpx.HTTPError as exc:
        # A dropped or refused connection may work next time; a bad URL, protocol or redirect will not.
        retryable = isinstance(exc, (httpx.NetworkError, httpx.RemoteProtocolError))
        raise ProviderError(
            f"{provider}: search request failed ({type(exc).__name__})", retryable=retryable
        ) from None
    except (httpx.InvalidURL, UnicodeError) as exc:
        # httpx parses a redirect's Location even when not following it; a hostile one raises here.
        raise ProviderError(f"{provider}: search request failed ({type(exc).__name__})") from None
    except UnreadableBody as exc:
        raise ProviderError(f"{provider}: search answered {exc}") from None
    try:
        return json.loads(body)
    except ValueError:
        raise ProviderError(f"{provider}: search answered with a body that is not JSON") from None


def http_failure(provider: str, status: int, headers: httpx.Headers, *, hint: str | None = None,
                 retryable: bool | None = None, retry_after: float | None = None) -> ProviderError:
    """`<provider>: search answered HTTP <status> (<hint>)`. Unless told, 408, 429 and 5xx are
    retryable (anything else would fail the same again) and the hint is the usual one for the
    status; a retryable error carries `retry_after`, or else the Retry-After the provider sent."""
    if retryable is None:
        retryable = status in (408, 429) or status >= 500
    said = _HINTS.get(status, "") if hint is None else f" ({hint})"
    wait = retry_after if retry_after is not None else retry_after_seconds(headers)
    return ProviderError(f"{provider}: search answered HTTP {status}{said}", retryable=retryable,
                         retry_after=wait if retryable else None)


async def _error_body(response: httpx.Response) -> Any:
    """The JSON of an error answer, or None when it is not JSON, too big, or cut off (the status
    still says what went wrong)."""
    try:
        return json.loads(await read_body(response, BodyLimits(ERROR_BODY_BYTES), cut=False))
    except (UnreadableBody, ValueError, httpx.HTTPError):
        return None


def error_code(body: Any, *path: str) -> str | None:
    """The machine-readable error code at body[path...] (e.g. Brave's error.code), if it looks
    like one: free text is never passed on, since it could echo what was sent."""
    code = body
    for key in path:
        code = code.get(key) if isinstance(code, Mapping) else None
    return code if isinstance(code, str) and _ERROR_CODE.fullmatch(code) else None


def evidence_from_results(
    provider: str, results: Any, *, snippet_key: str, max_results: int
) -> list[Evidence]:
    """Turn a provider's result list (dicts with url, title and `snippet_key`) into at most
    `max_results` bounded Evidence items. Items without an http(s) URL are skipped; a
    `results` that is not a list of objects is a ProviderError."""
    if not isinstance(results, list) or not all(isinstance(item, Mapping) for item in results):
        raise ProviderError(f"{provider}: search answered with an unexpected JSON shape")
    evidence: list[Evidence] = []
    for item in results:
        url = item.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            continue
        if len(url) > URL_CHARS:
            continue
        title, snippet = item.get("title"), item.get(snippet_key)
        evidence.append(
            Evidence(
                url=bounded(url, URL_CHARS),
                title=text_from_fragment(title if isinstance(title, str) else "", TITLE_CHARS),
                snippet=text_from_fragment(
                    snippet if isinstance(snippet, str) else "", SNIPPET_CHARS
                ),
            )
        )
        if len(evidence) >= max_results:
            break
    return evidence


def json_at(provider: str, body: Any, *path: str) -> Any:
    """body[path[0]][path[1]]...; a missing key or non-object on the way is a ProviderError."""
    for key in path:
        if not isinstance(body, Mapping) or key not in body:
            raise ProviderError(f"{provider}: search answered with an unexpected JSON shape")
        body = body[key]
    return body


def search_query(domain: str) -> str:
    """The query every search adapter sends: aimed at what the company sells."""
    return f'"{domain}" company products'

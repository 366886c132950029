"""What one cheap look at a domain observed: its DNS answers and its homepage's first response.

These are the inputs of the pre-check (site_status.py). Adapters fill them in: the resolver
(ports/resolver.py) the DNS facts, the homepage reader the HTTP facts, with the registrable
domain of the final URL computed where tldextract lives. Everything here may come from a hostile
server, so nothing is trusted to be well formed: the rule reads it within limits.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from html.entities import html5

# The rule reads at most this much of a page (characters of decoded HTML) and of its title: a
# parking or challenge page says what it is near its start, and a bounded read keeps the check
# cheap whatever the server sends. The homepage reader need not read more for the pre-check.
PAGE_CHARS = 100_000
TITLE_CHARS = 300
_REFERENCE_CHARS = 32  # the longest character reference decoded (&CounterClockwiseContourIntegral;)


class DnsOutcome(str, enum.Enum):
    """How the resolver answered for a name."""

    ANSWERED = "answered"  # one address or more (A or AAAA)
    NXDOMAIN = "nxdomain"  # the name does not exist
    NO_ADDRESS = "no_address"  # the name exists, with no A or AAAA record
    FAILED = "failed"  # SERVFAIL, REFUSED or another resolver error: nothing known
    TIMEOUT = "timeout"  # no answer in time: nothing known

    @property
    def has_no_address(self) -> bool:
        """The DNS said, for sure, that there is nothing to connect to."""
        return self in (DnsOutcome.NXDOMAIN, DnsOutcome.NO_ADDRESS)


@dataclass(frozen=True)
class DnsFacts:
    """One name's DNS: its addresses, the CNAME chain followed to reach them (the names, in order,
    that the queried name pointed to), and the name servers of the zone the name belongs to."""

    outcome: DnsOutcome
    addresses: tuple[str, ...] = ()
    cname_chain: tuple[str, ...] = ()
    name_servers: tuple[str, ...] = ()
    detail: str = ""  # the resolver's words when it failed (for the reason a user reads)


class HttpFailure(str, enum.Enum):
    """Why the homepage gave no response at all."""

    REFUSED = "refused"  # connection refused or reset
    TLS = "tls"  # the TLS handshake failed (https), and plain http failed too
    TIMEOUT = "timeout"
    REDIRECTS = "redirects"  # a redirect loop, too many redirects, or one that cannot be followed
    FORBIDDEN_ADDRESS = "forbidden_address"  # resolves only to addresses the SSRF guard refuses
    OTHER = "other"


@dataclass(frozen=True)
class HttpFacts:
    """The homepage's answer after redirects: either a failure or a status with headers, the
    final URL, and the start of the page.

    `headers` are (name, value) pairs as received (names in any case, repeats allowed);
    `final_registrable_domain` is the registrable domain of `final_url` (None when unknown);
    `title` is the page's title when the reader extracted one, None to let the rule read it from
    `body`, the first bounded chunk of the decoded page.
    """

    status: int | None = None
    failure: HttpFailure | None = None
    failure_detail: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    final_url: str = ""
    final_registrable_domain: str | None = None
    title: str | None = None
    body: str = ""


@dataclass(frozen=True)
class SiteFacts:
    """Everything the pre-check saw of one domain.

    `dns` is the domain itself; `www_dns` is `www.<domain>` when it was looked up (a company may
    serve its site there only). `http` is None when no fetch was made (there was nothing to
    connect to). `registrable_domain` is the domain's own registrable domain, to tell a redirect
    to another site from one within the site (None: the domain itself).
    """

    domain: str
    dns: DnsFacts
    www_dns: DnsFacts | None = None
    http: HttpFacts | None = None
    registrable_domain: str | None = None


def page_title(body: str) -> str:
    """The text of the first <title> element in the start of `body`, unescaped, whitespace
    collapsed, at most TITLE_CHARS characters; "" when there is none.

    Plain string searches, no regular expression: linear in the (bounded) input whatever it holds.
    """
    head = body[:PAGE_CHARS]
    lowered = head.lower()
    start = lowered.find("<title")
    if start < 0:
        return ""
    opened = lowered.find(">", start)
    if opened < 0:
        return ""
    closed = lowered.find("</title", opened)
    raw = head[opened + 1: closed if closed >= 0 else opened + 1 + 4 * TITLE_CHARS]
    return " ".join(unescape(raw[: 4 * TITLE_CHARS]).split())[:TITLE_CHARS]


def unescape(text: str) -> str:
    """`text` with its character references (&amp; &#58; &#x3a;) decoded, in one linear pass.

    Not html.unescape: on hostile text it converts digit runs of any length to an integer
    (quadratic, and a ValueError past Python's 4,300-digit limit). Here a reference is decoded
    only when it ends with ";" within _REFERENCE_CHARS characters; anything else stays as it is.
    """
    out: list[str] = []
    position = 0
    while True:
        amp = text.find("&", position)
        if amp < 0:
            out.append(text[position:])
            return "".join(out)
        out.append(text[position:amp])
        end = text.find(";", amp + 1, amp + 2 + _REFERENCE_CHARS)
        decoded = _reference(text[amp + 1:end]) if end > 0 else None
        if decoded is None:
            out.append("&")
            position = amp + 1
        else:
            out.append(decoded)
            position = end + 1


def _reference(name: str) -> str | None:
    if not name.startswith("#"):
        return html5.get(name + ";")
    digits = name[1:]
    try:
        code = int(digits[1:], 16) if digits[:1] in ("x", "X") else int(digits, 10)
    except ValueError:
        return None
    if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF:
        return chr(code)
    return "\ufffd"


@dataclass(frozen=True)
class HomepageLook:
    """One bounded look at a domain's homepage: its response (or failure), and the domain's own
    registrable domain (to tell a redirect to another site from one within the site)."""

    http: HttpFacts
    registrable_domain: str

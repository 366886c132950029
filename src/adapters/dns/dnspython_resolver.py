"""The pre-check's resolver on dnspython: addresses, CNAME chain and zone name servers of a name.

dnspython rather than the system resolver: getaddrinfo returns addresses only, folds NXDOMAIN,
SERVFAIL and timeouts into one error, and cannot ask for NS records, while parking services are
known by their name servers and CNAME targets. Every DNS outcome becomes a DnsFacts, never an
exception, and a look-up ends within `total_timeout` whatever the servers do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import dns.asyncresolver
import dns.exception
import dns.message
import dns.name
import dns.rdatatype
import dns.resolver

from firmsift.domain.site_facts import DnsFacts, DnsOutcome

_MAX_CHAIN = 16  # CNAMEs followed at most (a loop or a hostile chain stops here)
_MAX_ZONE_STEPS = 5  # labels walked up to find the zone's name servers
_MAX_RECORDS = 32  # addresses and name servers kept at most
_RCODES = ("SERVFAIL", "REFUSED", "NOTIMP", "FORMERR")


class DnspythonResolver:
    """Asks the system's configured name servers, or `nameservers` (on `port`) when given.

    `timeout` bounds one try at one server, `lifetime` one query (tries and servers included),
    `total_timeout` a whole look-up (A, AAAA and name servers, asked concurrently). Nothing is
    cached here: the pre-check's result is what is cached.
    """

    def __init__(
        self,
        *,
        nameservers: Sequence[str] | None = None,
        port: int = 53,
        timeout: float = 2.0,
        lifetime: float = 4.0,
        total_timeout: float = 6.0,
    ) -> None:
        if nameservers:
            resolver = dns.asyncresolver.Resolver(configure=False)
            resolver.nameservers = list(nameservers)
            resolver.port = port
        else:
            resolver = dns.asyncresolver.Resolver()
        resolver.timeout = timeout
        resolver.lifetime = lifetime
        resolver.cache = None
        self._resolver = resolver
        self._total_timeout = total_timeout

    async def look_up(self, name: str) -> DnsFacts:
        try:
            qname = dns.name.from_text(name.strip().rstrip(".") + ".")
        except (dns.exception.DNSException, ValueError) as error:
            return DnsFacts(DnsOutcome.FAILED, detail=f"not a DNS name ({type(error).__name__})")
        try:
            async with asyncio.timeout(self._total_timeout):
                return await self._look_up(qname)
        except TimeoutError:
            return DnsFacts(DnsOutcome.TIMEOUT, detail=f"no answer within {self._total_timeout:g}s")

    async def _look_up(self, qname: dns.name.Name) -> DnsFacts:
        v4, v6, name_servers = await asyncio.gather(
            self._query(qname, dns.rdatatype.A),
            self._query(qname, dns.rdatatype.AAAA),
            self._zone_name_servers(qname),
        )
        if isinstance(v4, DnsFacts):
            # NXDOMAIN, a failure or a timeout for A says it all (the AAAA query shares its fate).
            kept = () if v4.outcome is DnsOutcome.NXDOMAIN else name_servers
            return DnsFacts(v4.outcome, cname_chain=v4.cname_chain, name_servers=kept, detail=v4.detail)
        answers = [answer for answer in (v4, v6) if isinstance(answer, dns.resolver.Answer)]
        addresses = tuple(
            rdata.to_text() for answer in answers if answer.rrset is not None for rdata in answer.rrset
        )[:_MAX_RECORDS]
        chain = _cname_chain(answers[0].response, qname) if answers else ()
        outcome = DnsOutcome.ANSWERED if addresses else DnsOutcome.NO_ADDRESS
        return DnsFacts(outcome, addresses=addresses, cname_chain=chain, name_servers=name_servers)

    async def _query(self, qname: dns.name.Name, rdtype: dns.rdatatype.RdataType) -> dns.resolver.Answer | DnsFacts:
        """The answer (possibly with no records), or the outcome that stopped it."""
        try:
            answer = await self._resolver.resolve(qname, rdtype, raise_on_no_answer=False, search=False)
        except dns.resolver.NXDOMAIN as error:
            # A CNAME to a name that does not exist: the queried name exists, with no address.
            response = error.responses().get(qname)
            chain = _cname_chain(response, qname) if response is not None else ()
            return DnsFacts(DnsOutcome.NO_ADDRESS if chain else DnsOutcome.NXDOMAIN, cname_chain=chain)
        except dns.exception.Timeout:
            return DnsFacts(DnsOutcome.TIMEOUT, detail=f"no answer within {self._resolver.lifetime:g}s")
        except dns.resolver.NoNameservers as error:
            return DnsFacts(DnsOutcome.FAILED, detail=_rcode_in(str(error)))
        except dns.exception.DNSException as error:
            return DnsFacts(DnsOutcome.FAILED, detail=type(error).__name__)
        # rrset None: NOERROR with no record of this type (the CNAME chain may still be there).
        return answer

    async def _zone_name_servers(self, qname: dns.name.Name) -> tuple[str, ...]:
        """The NS records of the closest enclosing zone: the name itself, or a parent (never
        the root or a top-level domain). Best effort: () when none could be read."""
        candidate = qname
        for _ in range(_MAX_ZONE_STEPS):
            if len(candidate.labels) <= 2:  # the root label counts: "com." has two
                return ()
            try:
                answer = await self._resolver.resolve(candidate, dns.rdatatype.NS, raise_on_no_answer=False,
                                                      search=False)
            except dns.resolver.NXDOMAIN:
                # The name (or where its CNAME leads) does not exist: its zone is higher up.
                candidate = candidate.parent()
                continue
            except dns.exception.DNSException:
                return ()
            if answer.rrset is not None and answer.rrset.name == candidate:
                return tuple(sorted(rdata.target.to_text(omit_final_dot=True).lower()
                                    for rdata in answer.rrset))[:_MAX_RECORDS]
            candidate = candidate.parent()
        return ()


def _cname_chain(response: dns.message.Message, qname: dns.name.Name) -> tuple[str, ...]:
    """The names `qname` pointed to, in order, read from the response's answer section."""
    cnames = {rrset.name: rrset for rrset in response.answer if rrset.rdtype == dns.rdatatype.CNAME}
    chain: list[str] = []
    current = qname
    seen = {qname}
    while current in cnames and len(chain) < _MAX_CHAIN:
        target = cnames[current][0].target
        chain.append(target.to_text(omit_final_dot=True).lower())
        if target in seen:
            break
        seen.add(target)
        current = target
    return tuple(chain)


def _rcode_in(text: str) -> str:
    for rcode in _RCODES:
        if rcode in text:
            return rcode
    return "no server answered"

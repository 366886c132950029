"""A tiny authoritative DNS server on loopback for resolver tests: answers from a table built
with dnspython's message API, and can answer SERVFAIL or stay silent for chosen names."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset

from firmsift.domain.dns_trust import DEFAULT_CANARIES


@dataclass
class Zone:
    """Records by (owner name, type); names are absolute text ("acme.test.")."""

    records: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    servfail: set[str] = field(default_factory=set)
    silent: set[str] = field(default_factory=set)

    def add(self, name: str, rdtype: str, values: Iterable[str]) -> None:
        self.records.setdefault((name.lower(), rdtype), []).extend(values)

    def with_canaries(self) -> Zone:
        """This zone, answering for the names the pre-check asks to tell a truthful resolver
        (FIRMSIFT_DNS_CANARIES' default) as a real one does."""
        for name in DEFAULT_CANARIES:
            self.add(f"{name}.", "A", ["192.0.2.1"])
        return self

    def exists(self, name: str) -> bool:
        return any(owner == name for owner, _ in self.records)


class LoopbackDns:
    """Serves `zone` over UDP on 127.0.0.1 (an OS-chosen port) from a thread; `queries` counts
    the questions received."""

    def __init__(self, zone: Zone) -> None:
        self.zone = zone
        self.queries = 0
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.settimeout(0.1)
        self.port = self._socket.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> LoopbackDns:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._socket.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                wire, peer = self._socket.recvfrom(4096)
            except (TimeoutError, OSError):
                continue
            self.queries += 1
            reply = self._answer(wire)
            if reply is not None:
                self._socket.sendto(reply, peer)

    def _answer(self, wire: bytes) -> bytes | None:
        query = dns.message.from_wire(wire)
        question = query.question[0]
        name = question.name.to_text().lower()
        rdtype = dns.rdatatype.to_text(question.rdtype)
        if name in self.zone.silent:
            return None
        response = dns.message.make_response(query)
        response.flags |= dns.flags.AA
        if name in self.zone.servfail:
            response.set_rcode(dns.rcode.SERVFAIL)
            return response.to_wire()
        current = name
        for _ in range(20):  # follow CNAMEs inside the zone, as an authoritative server does
            cname = self.zone.records.get((current, "CNAME"))
            if not cname or rdtype == "CNAME":
                break
            response.answer.append(_rrset(current, "CNAME", cname))
            current = cname[0].lower()
        values = self.zone.records.get((current, rdtype))
        if values:
            response.answer.append(_rrset(current, rdtype, values))
        elif not self.zone.exists(current):
            response.set_rcode(dns.rcode.NXDOMAIN)
        return response.to_wire()


def _rrset(name: str, rdtype: str, values: list[str]) -> dns.rrset.RRset:
    return dns.rrset.from_text_list(dns.name.from_text(name), 60, dns.rdataclass.IN, rdtype, values)

"""No test picks a free port and releases it for another process to bind later: that port may be
taken in between (tests/e2e/test_faults_llm.py once failed so on a fresh clone)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# A socket bound to port 0 is allowed only where the same socket is then used: held open to
# refuse connections (refusing_port), or served on (bench's bare app, the loopback DNS server).
HOLDERS = {"tests/support/processes.py", "bench/bare_app.py", "tests/support/loopback_dns.py"}
BIND_PORT_ZERO = re.compile(r"\.bind\(\(\s*[^,]+,\s*0\s*\)\)")


def test_no_module_binds_port_0_only_to_learn_a_free_port() -> None:
    offenders = []
    for path in sorted([*REPO.glob("tests/**/*.py"), *REPO.glob("bench/**/*.py")]):
        relative = path.relative_to(REPO).as_posix()
        source = path.read_text(encoding="utf-8")
        if relative == "tests/unit/test_no_port_picking.py":
            continue
        if "def free_port" in source or (BIND_PORT_ZERO.search(source) and relative not in HOLDERS):
            offenders.append(relative)
    assert offenders == [], f"pick-and-release of a port in {offenders}: bind port 0 in the serving process"

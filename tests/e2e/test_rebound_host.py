"""DNS rebinding against a real `firmsift api` on 127.0.0.1 with keys off (what `./dev serve`
runs) and the default FIRMSIFT_ALLOWED_HOSTS: requests naming attacker.example are refused with
421 before any work is paid for or written, the health probes answer, and the API's own address
and `localhost` are served as before."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from tests.support.processes import Processes, start_api

REBOUND = {"host": "attacker.example:8000"}


def test_a_real_api_without_keys_serves_only_its_own_host_names(tmp_path: Path) -> None:
    processes = Processes(tmp_path)
    try:
        api, base = start_api(processes, extra_env={"FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'api.db'}",
                                                    "FIRMSIFT_ALLOWED_HOSTS": ""})  # the default, not the tests' list
        port = base.rsplit(":", 1)[1]
        with httpx.Client(base_url=base, timeout=30) as client:
            batch = client.post("/batches", json={"classifier": "cpg", "domains": ["acme.com"]}, headers=REBOUND)
            answer = client.put("/answers/cpg/acme.com", json={"answer": False, "note": "rebound"}, headers=REBOUND)
            page = client.get("/new", headers=REBOUND)
            for refused in (batch, answer, page):
                assert refused.status_code == 421 and refused.json()["error"]["code"] == "host_not_allowed"
            assert "csrf" not in page.text
            assert client.get("/healthz", headers=REBOUND).status_code == 200

            assert client.get("/answers").json()["answers"] == []  # the PUT wrote nothing
            assert client.post("/batches", json={"classifier": "cpg", "domains": ["acme.com"]}).status_code == 202
            assert client.get("/new", headers={"host": f"localhost:{port}"}).status_code == 200
    finally:
        processes.stop_all()
    logged = [json.loads(line) for line in api.log().splitlines() if line.startswith("{")]
    assert not [line for line in logged if line["level"] == "ERROR"], logged

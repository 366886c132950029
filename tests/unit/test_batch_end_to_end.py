"""A batch end to end in one process, on the in-memory container: POSTed over HTTP with duplicates
and bad rows, answered by the embedded worker, followed to DONE, read back in input order with the
caller's original values, and replied to once."""

import json
import time

from starlette.testclient import TestClient

from firmsift.adapters.memory.providers import ScriptedLLM
from firmsift.entrypoints.wiring.memory import in_memory_container
from firmsift.entrypoints.wiring.runtime import running_worker
from firmsift.entrypoints.settings import Settings

YES = '{"is_cpg": true, "confidence": 5, "reasoning": "Makes snacks.", "quote": "makes and sells packaged snacks"}'
GOOD = [f"https://www.brand{i}.example.com/about" for i in range(20)]
ITEMS = [*GOOD[:10], "BRAND3.example.com", "not a domain", 42, "localhost", *GOOD[10:], GOOD[0]]


def _wait_done(client: TestClient, location: str) -> dict:
    for _ in range(1000):
        shown = client.get(location).json()
        if shown["status"] != "RUNNING":
            return shown
        time.sleep(0.01)
    raise AssertionError(f"batch still running: {shown}")


def test_a_batch_is_split_answered_followed_and_read_back_in_input_order() -> None:
    container = in_memory_container(Settings(wait_time=0.2))
    llm = ScriptedLLM(YES)
    container.llm.override(llm)
    app = container.api(background=lambda: running_worker(container))

    with TestClient(app) as client:
        accepted = client.post("/batches", json={"classifier": "cpg", "domains": ITEMS},
                               headers={"X-Reply-Queue": "team"})
        assert accepted.status_code == 202, accepted.text
        body = accepted.json()
        shown = _wait_done(client, accepted.headers["location"])
        lines = client.get(f"{accepted.headers['location']}/results").text.splitlines()
        table = client.get(f"{accepted.headers['location']}/results", headers={"Accept": "text/csv"}).text

    assert (body["total"], body["accepted"], body["duplicates"]) == (25, 20, 2)
    assert [(r["index"], r["reason"]) for r in body["rejected"]] == [
        (11, "contains whitespace or backslashes"), (12, "must be a string, not int"),
        (13, "is a single label, not a public host name")]
    assert (shown["status"], shown["total"], shown["done"], shown["pending"]) == ("DONE", 20, 20, 0)
    assert shown["by_source"] == {"llm": 20} and shown["finished_at"] is not None
    results = [json.loads(line) for line in lines]
    assert [r["input"] for r in results] == ITEMS
    assert [r["index"] for r in results] == list(range(25))
    assert results[10]["classified_domain"] == "brand3.example.com" and results[10]["answer"] is True
    assert [r["status"] for r in results[11:14]] == ["REJECTED"] * 3 and results[12]["error"]
    assert results[24]["classified_domain"] == "brand0.example.com" and results[24]["status"] == "DONE"
    assert table.splitlines()[0].startswith("input,classified_domain,status,answer,confidence")
    assert len(table.splitlines()) == 26
    assert sum(llm.calls_about(d) for d in (f"brand{i}.example.com" for i in range(20))) == 20
    [reply] = container.replies().published
    assert reply.queue == "team" and json.loads(reply.body)["status"] == "DONE"

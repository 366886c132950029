"""`firmsift classify --csv` through batches against a real `firmsift serve`: the messy export comes back
row for row, one progress line follows the file, a download that broke off resumes without a new batch."""

from __future__ import annotations

import csv
import io
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from tests.e2e.test_cli import MESSY_EXPORT, firmsift
from tests.support.processes import Processes, start_api

pytestmark = pytest.mark.e2e


class CuttingProxy:
    """Forwards to the API; counts the batches submitted (a replayed submission is not a new batch) and
    calls `on_batch_posted` with their count before the client hears of a new one; while `cut_after` is
    set, a results download stops after that many lines (the connection closes short of its Content-Length)."""

    def __init__(self, upstream: str) -> None:
        self.upstream, self.cut_after, self.batches_posted = upstream, None, 0
        self.on_batch_posted: Callable[[int], None] = lambda posted: None
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._forward("GET")

            def do_POST(self) -> None:
                self._forward("POST")

            def _forward(self, method: str) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
                # verify=False: the upstream is plain HTTP on loopback, and loading the CA bundle for a
                # client that never uses it cost ~40 ms of CPU per forwarded request (a big list's
                # polls and downloads made it a third of its test process's CPU).
                answer = httpx.request(method, proxy.upstream + self.path, content=body, headers=headers, timeout=30,
                                       verify=False)
                if (method == "POST" and self.path.startswith("/batches") and answer.status_code == 202
                        and "idempotent-replayed" not in answer.headers):
                    proxy.batches_posted += 1
                    proxy.on_batch_posted(proxy.batches_posted)
                content = answer.content
                sent = content
                if "/results" in self.path and proxy.cut_after is not None:
                    sent = b"".join(content.splitlines(keepends=True)[:proxy.cut_after])
                self.close_connection = True
                try:
                    self.send_response(answer.status_code)
                    self.send_header("content-type", answer.headers.get("content-type", "application/json"))
                    self.send_header("content-length", str(len(content)))
                    self.end_headers()
                    self.wfile.write(sent)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client was killed (on_batch_posted) before its answer

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Processes, str]]:
    processes = Processes(tmp_path)
    try:
        script = tmp_path / "llm-script.json"
        script.write_text(json.dumps({"*": {"broken-answer.com": {"content": "I would rather not say."}}}))
        _llm, llm_port = processes.start_fake("tests.support.fake_llm_server", "--script", str(script))
        _search, search_port = processes.start_fake("tests.support.fake_search_server")
        processes.env = {
            "FIRMSIFT_DATABASE_URL": f"sqlite:///{tmp_path / 'serve.db'}",
            "FIRMSIFT_LLM_MODEL": "openai/fake-model",
            "FIRMSIFT_LLM_API_BASE": f"http://127.0.0.1:{llm_port}/v1",
            "FIRMSIFT_SEARCH_PROVIDER": "searxng",
            "FIRMSIFT_SEARXNG_URL": f"http://127.0.0.1:{search_port}",
            "FIRMSIFT_MAX_DOMAINS_PER_JOB": "2",
            # 10 rows hold 7 domains: the first batch of 10 rows is refused (413), so the file goes as several.
            "FIRMSIFT_MAX_DOMAINS_PER_BATCH": "3",
            "FIRMSIFT_WAIT_TIME": "1",
        }
        _serve, base = start_api(processes, "serve", command="serve")
        yield processes, base
    finally:
        processes.stop_all()


def test_a_broken_download_resumes_into_the_same_file_without_a_new_batch(tmp_path: Path, served) -> None:
    processes, base = served
    proxy = CuttingProxy(base)
    source = tmp_path / "export.csv"
    source.write_bytes(MESSY_EXPORT.encode("utf-8-sig"))
    out, part = tmp_path / "out.csv", tmp_path / "out.csv.part"
    state = tmp_path / "out.csv.part.batch.json"
    run = ("classify", "--csv", str(source), "--column", "official website", "--api", proxy.base_url,
           "--poll-interval", "0.2", "-o", str(out))

    proxy.cut_after = 2
    stopped = firmsift(*run, env=processes.env)
    assert stopped.returncode == 1, stopped.stderr
    assert "broke off" in stopped.stderr and f"the rows finished so far are in {part}" in stopped.stderr
    assert not out.exists() and part.exists() and state.exists()
    submitted = proxy.batches_posted
    assert submitted >= 3  # 7 unique domains, at most 3 a batch
    # Not a TTY: plain lines, the last one when every domain has finished.
    assert "batches: 7/7 domains (100%), " in stopped.stderr and ", done\n" in stopped.stderr
    assert "\r" not in stopped.stderr

    proxy.cut_after = None
    resumed = firmsift(*run, env=processes.env)
    assert resumed.returncode == 3, resumed.stderr
    assert f"resuming: {submitted} batch(es) already submitted" in resumed.stderr
    assert proxy.batches_posted == submitted  # no new batch: nothing paid twice
    assert "10 rows: 6 answered, 1 failed, 3 rejected" in resumed.stderr  # rows of both runs counted
    assert not part.exists() and not state.exists()

    # The same file again, in one go, to another output: the same batches (their Idempotency-Keys), the same bytes.
    again = tmp_path / "again.csv"
    whole = firmsift(*run[:-1], str(again), env=processes.env)
    assert whole.returncode == 3, whole.stderr
    assert proxy.batches_posted == submitted
    assert "line 4: took thekrogerco.com" in whole.stderr and 'line 6: rejected "": blank cell' in whole.stderr
    assert "line 9: failed broken-answer.com: " in whole.stderr
    assert out.read_bytes() == again.read_bytes()
    # To standard output as JSON: the same batches again (their keys hold the file, not the output).
    as_json = firmsift(*run[:-2], "--format", "json", env=processes.env)
    assert as_json.returncode == 3, as_json.stderr
    assert proxy.batches_posted == submitted
    assert [(item["line"], item["status"]) for item in json.loads(as_json.stdout)][:2] == [(2, "DONE"), (4, "DONE")]

    raw = out.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf") and raw.count(b"\xef\xbb\xbf") == 1  # one BOM, though written twice
    header, *rows = list(csv.reader(io.StringIO(raw.decode("utf-8-sig"), newline=""), delimiter=";"))
    source_rows = list(csv.reader(io.StringIO(MESSY_EXPORT, newline=""), delimiter=";"))
    assert header[:4] == [*source_rows[0], "classified_domain"] and header[-2:] == ["error", "job_id"]
    assert [r[:3] for r in rows] == source_rows[1:]
    assert [(r[3], r[4]) for r in rows] == [
        ("kimberly-clark.com", "DONE"), ("thekrogerco.com", "DONE"), ("investors.axosfinancial.com", "DONE"),
        ("", "REJECTED"), ("", "REJECTED"), ("citybank.com", "DONE"), ("broken-answer.com", "FAILED"),
        ("", "REJECTED"), ("acme-snacks.com", "DONE"), ("kimberly-clark.com", "DONE")]
    assert all(r[header.index("job_id")] for r in rows if r[4] != "REJECTED")  # the job that answered each row

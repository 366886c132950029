"""What `worker --processes N` and `api --workers N` hand their copies."""

from __future__ import annotations

from firmsift.entrypoints.cli.scale_out import api_copies, listening_socket, worker_copies
from firmsift.entrypoints.settings import Settings


def settings(**values: object) -> Settings:
    return Settings(database_url="sqlite:///unused.db", **values)  # type: ignore[arg-type]


def test_worker_copies_split_the_search_budget_evenly_and_keep_everything_else() -> None:
    """The LLM ceiling is shared through the database's pacing state: each copy gets all of it."""
    copies = worker_copies(settings(llm_requests_per_minute=90, search_requests_per_minute=30), 3,
                           environ={"FIRMSIFT_LLM_CONCURRENCY": "8", "PATH": "/bin",
                                    "FIRMSIFT_LLM_REQUESTS_PER_MINUTE": "90"})
    assert len(copies) == 3
    for copy in copies:
        assert copy.argv[-1] == "worker"
        assert float(copy.env["FIRMSIFT_LLM_REQUESTS_PER_MINUTE"]) == 90
        assert float(copy.env["FIRMSIFT_SEARCH_REQUESTS_PER_MINUTE"]) == 10
        assert copy.env["FIRMSIFT_LLM_CONCURRENCY"] == "8" and copy.env["PATH"] == "/bin"
        assert "FIRMSIFT_WORKER_PROBE_PORT" not in copy.env


def test_no_budget_stays_no_budget_and_a_fixed_probe_port_becomes_one_port_per_copy() -> None:
    copies = worker_copies(settings(worker_probe_port=9100), 2, environ={})
    assert [copy.env["FIRMSIFT_WORKER_PROBE_PORT"] for copy in copies] == ["9100", "9101"]
    assert not any("FIRMSIFT_SEARCH_REQUESTS_PER_MINUTE" in copy.env for copy in copies)


def test_a_probe_on_any_free_port_stays_so_for_every_copy() -> None:
    copies = worker_copies(settings(worker_probe_port=0), 2, environ={"FIRMSIFT_WORKER_PROBE_PORT": "0"})
    assert [copy.env["FIRMSIFT_WORKER_PROBE_PORT"] for copy in copies] == ["0", "0"]


def test_api_copies_share_the_parents_listening_socket() -> None:
    with listening_socket("127.0.0.1", 0, backlog=8) as listener:
        port = listener.getsockname()[1]
        copies = api_copies("127.0.0.1", port, listener, 2, environ={})
        assert listener.get_inheritable()
        for copy in copies:
            assert copy.pass_fds == (listener.fileno(),)
            assert copy.argv[-7:] == ["api", "--host", "127.0.0.1", "--port", str(port), "--listen-fd",
                                      str(listener.fileno())]

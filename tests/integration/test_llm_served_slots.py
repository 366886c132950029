"""Calls toward a local LLM server default to what it serves at once: llama.cpp's total_slots at
GET /props (the fake answers as llama.cpp does), else 1 (llama-cpp-python has no /props); a
provider's API and an explicit FIRMSIFT_LLM_CONCURRENCY keep the setting."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from firmsift.adapters.llm.served_slots import MAX_PROPS_BYTES, served_slots
from firmsift.entrypoints.settings import Settings
from firmsift.entrypoints.wiring.llm_calls_at_once import llm_concurrency
from tests.support.fake_llm_server import FakeLLMServer
from tests.support.loopback_http import ServerThread


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    server = FakeLLMServer()
    with server:
        yield server


def settings(api_base: str, **more: object) -> Settings:
    return Settings(llm_model="openai/local", llm_api_base=api_base, precheck=False, **more)


def test_a_llama_cpp_server_is_asked_as_many_calls_as_it_has_slots(llm: FakeLLMServer,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    llm.total_slots = 3
    assert served_slots(llm.base_url) == 3  # /props beside /v1
    with caplog.at_level(logging.INFO, logger="firmsift.entrypoints.wiring.llm_calls_at_once"):
        assert llm_concurrency(settings(llm.base_url)) == 3
    assert "local server that serves 3 calls at once (its total_slots): a worker makes 3 at once" in caplog.text


def test_a_server_that_does_not_say_is_asked_one_call_at_a_time(llm: FakeLLMServer) -> None:
    assert served_slots(llm.base_url) is None  # 404, as llama-cpp-python's server answers
    assert llm_concurrency(settings(llm.base_url)) == 1


def test_a_server_that_is_not_up_yet_is_asked_one_call_at_a_time() -> None:
    from tests.support.processes import refusing_port

    with refusing_port() as closed:
        assert llm_concurrency(settings(f"http://127.0.0.1:{closed}/v1")) == 1


def test_the_setting_wins_when_set_and_for_a_provider(llm: FakeLLMServer) -> None:
    llm.total_slots = 3
    assert llm_concurrency(settings(llm.base_url, llm_concurrency=12)) == 12
    assert llm_concurrency(Settings(llm_model="openai/gpt-5.4-mini", llm_api_base="https://api.openai.com/v1",
                                    precheck=False)) == 8
    assert [r for r in llm.requests] == []  # /props is not a chat request, and none was made for these


class _Props(BaseHTTPRequestHandler):
    body = b""

    def do_GET(self) -> None:  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.mark.parametrize("body", [b'{"total_slots": 0}', b'{"total_slots": true}', b'{"total_slots": "4"}',
                                  b"[4]", b"not json", b'{"total_slots": 2, "pad": "' + b"x" * MAX_PROPS_BYTES + b'"}'])
def test_a_props_document_that_makes_no_sense_says_nothing(body: bytes) -> None:
    handler = type("Props", (_Props,), {"body": body})
    server = ServerThread("127.0.0.1", 0, handler, name="props")
    server.start()
    try:
        assert served_slots(f"http://127.0.0.1:{server.port}/v1") is None
    finally:
        server.stop()

"""The LLM adapters (litellm's and the direct OpenAI-compatible client) against the scripted
OpenAI-compatible server, over loopback only."""

from __future__ import annotations

import json
import math
import os
import socket
import ssl
import subprocess
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import litellm
import openai
import pytest

from firmsift.adapters.llm.litellm_llm import LiteLLM, OutputMode, refuses_output_format
from firmsift.adapters.llm.laddered_llm import LadderedLLM
from firmsift.adapters.llm.output_modes import FormatMemory
from firmsift.domain.errors import FailureCause, ProviderError
from tests.support.fake_llm_server import FakeLLMServer, load_fixture
from tests.support.llm_adapters import MakeLLM, adapter_class, maker
from tests.support.waiting import no_hang

__all__ = ["adapter_class"]  # the fixture every `llm` is made with

API_KEY = "sk-test-secret"
ROOT = Path(__file__).resolve().parents[2]
CPG_SCHEMA: dict[str, Any] = {
    "title": "cpg answer",
    "type": "object",
    "properties": {
        "is_cpg": {"type": "boolean"},
        "confidence": {"type": "integer"},
        "reasoning": {"type": "string"},
    },
    "required": ["is_cpg", "confidence", "reasoning"],
    "additionalProperties": False,
}
ANSWER = '{"is_cpg": true, "confidence": 5, "reasoning": "sells snacks"}'


@pytest.fixture
def llm(adapter_class: type[LadderedLLM]) -> MakeLLM:
    """Makes adapters of each kind (litellm's, the direct client) for the fake model at an API base."""
    return maker(adapter_class, "openai/fake-model", API_KEY, timeout=10.0)


async def ask(adapter: LadderedLLM) -> Any:
    return await adapter.complete("You classify companies.", "Domain: acme.com", json_schema=CPG_SCHEMA)


def assert_no_secret(error: BaseException) -> None:
    assert API_KEY not in str(error)
    assert API_KEY not in "".join(traceback.format_exception(error))


@pytest.mark.anyio
async def test_returns_the_answer_and_asks_for_json_schema_first(fake_llm_server: FakeLLMServer, llm: MakeLLM) -> None:
    fake_llm_server.enqueue(ANSWER)
    completion = await ask(llm(fake_llm_server.base_url, max_tokens=300))

    assert completion.text == ANSWER
    assert completion.model == "fake-model"
    assert completion.finish_reason == "stop"
    [sent] = fake_llm_server.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    assert [m["role"] for m in sent.body["messages"]] == ["system", "user"]
    assert sent.body["max_tokens"] == 300
    assert "temperature" not in sent.body
    assert sent.response_format == {
        "type": "json_schema",
        "json_schema": {"name": "cpg_answer", "schema": CPG_SCHEMA, "strict": True},
    }


@pytest.mark.anyio
async def test_sends_temperature_only_when_configured(fake_llm_server: FakeLLMServer, llm: MakeLLM) -> None:
    await ask(llm(fake_llm_server.base_url, temperature=0.0))
    assert fake_llm_server.requests[0].body["temperature"] == 0.0


@pytest.mark.anyio
async def test_an_api_base_without_v1_reaches_the_bare_path(fake_llm_server: FakeLLMServer, llm: MakeLLM) -> None:
    await ask(llm(fake_llm_server.base_url.removesuffix("/v1")))
    assert fake_llm_server.requests[0].path == "/chat/completions"


@pytest.mark.anyio
async def test_concurrent_calls_are_served_side_by_side(fake_llm_server: FakeLLMServer, llm: MakeLLM) -> None:
    """Five calls are in the server's hands at once: each answer waits until all five have
    arrived (up to TOGETHER_TIMEOUT), so calls sent in series would be seen one at a time. Seen
    from the server, not timed: a loaded machine once took 2.3 s for five 0.5 s answers."""
    adapter = llm(fake_llm_server.base_url)
    fake_llm_server.answer_together = 5
    for _ in range(5):
        fake_llm_server.enqueue(ANSWER)

    async with anyio.create_task_group() as calls:
        for _ in range(5):
            calls.start_soon(ask, adapter)
    assert fake_llm_server.most_at_once == 5, f"at most {server.most_at_once} of five calls were in flight at once"
    assert len(fake_llm_server.requests) == 5


@pytest.mark.anyio
async def test_falls_back_to_llama_cpp_schema_mode_and_remembers_it(llm: MakeLLM) -> None:
    fake = FakeLLMServer(reject_json_schema=True)
    with fake as base_url:
        adapter = llm(base_url)
        fake.enqueue(ANSWER)
        first = await ask(adapter)
        fake.enqueue(ANSWER)
        second = await ask(adapter)

    assert first.text == second.text == ANSWER
    assert [r.response_format_type for r in fake.requests] == ["json_schema", "json_object", "json_object"]
    assert fake.requests[1].response_format == {"type": "json_object", "schema": CPG_SCHEMA}
    assert fake.requests[2].response_format == {"type": "json_object", "schema": CPG_SCHEMA}
    assert adapter.mode is OutputMode.JSON_OBJECT_WITH_SCHEMA


@pytest.mark.anyio
async def test_falls_back_to_no_response_format_when_every_one_is_refused(llm: MakeLLM) -> None:
    fake = FakeLLMServer(reject_response_format=True)
    with fake as base_url:
        adapter = llm(base_url)
        fake.enqueue(ANSWER)
        first = await ask(adapter)
        fake.enqueue(ANSWER)
        await ask(adapter)

    assert first.text == ANSWER
    assert [r.response_format for r in fake.requests] == [
        {"type": "json_schema", "json_schema": {"name": "cpg_answer", "schema": CPG_SCHEMA, "strict": True}},
        {"type": "json_object", "schema": CPG_SCHEMA},
        {"type": "json_object"},
        None,
        None,
    ]
    assert "response_format" not in fake.requests[-1].body
    assert adapter.mode is OutputMode.NONE


@pytest.mark.anyio
async def test_an_unrelated_bad_request_fails_without_downgrading_the_mode(
        fake_llm_server: FakeLLMServer, llm: MakeLLM) -> None:
    fake_llm_server.enqueue("This model's maximum context length is 10 tokens", status=400)
    adapter = llm(fake_llm_server.base_url)

    with pytest.raises(ProviderError, match="too long"):
        await ask(adapter)
    assert len(fake_llm_server.requests) == 1
    assert adapter.mode is OutputMode.JSON_SCHEMA


@pytest.mark.anyio
async def test_a_cut_off_answer_is_an_error(fake_llm_server: FakeLLMServer, llm: MakeLLM) -> None:
    fake_llm_server.enqueue('{"is_cpg": tr', finish_reason="length")
    with pytest.raises(ProviderError, match="cut off"):
        await ask(llm(fake_llm_server.base_url))


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (500, "provider failed"),
        (503, "provider failed"),
        (401, "refused the credentials"),
        (403, "refused the credentials"),
        (429, "rate limited"),
    ],
)
async def test_http_errors_become_provider_errors_without_the_key(
    fake_llm_server: FakeLLMServer, status: int, expected: str,
    llm: MakeLLM,
) -> None:
    # Providers do quote the key back (OpenAI: "Incorrect API key provided: sk-...").
    fake_llm_server.enqueue(f"Incorrect API key provided: {API_KEY}", status=status)

    with pytest.raises(ProviderError, match=expected) as caught:
        await ask(llm(fake_llm_server.base_url))
    assert f"HTTP {status}" in str(caught.value)
    assert_no_secret(caught.value)
    assert len(fake_llm_server.requests) == 1, "the adapter must not retry on its own"


@pytest.mark.anyio
async def test_a_slow_provider_times_out_within_bounds(fake_llm_server: FakeLLMServer, llm: MakeLLM) -> None:
    # The server never answers (held until it stops): only the adapter's timeout can end the call.
    fake_llm_server.enqueue(ANSWER, delay=math.inf)

    with no_hang(), pytest.raises(ProviderError, match="timed out|timeout") as caught:
        await ask(llm(fake_llm_server.base_url, timeout=0.5))
    assert_no_secret(caught.value)
    assert len(fake_llm_server.requests) == 1


@pytest.mark.anyio
async def test_an_unreachable_provider_is_an_error(llm: MakeLLM) -> None:
    fake = FakeLLMServer()  # bound, then closed: nothing listens on its port any more
    base_url = fake.base_url
    fake.stop()

    with pytest.raises(ProviderError, match="could not reach") as caught:
        await ask(llm(base_url))
    assert_no_secret(caught.value)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "reply",
    [
        {"content": None, "refusal": "I can't help with that."},
        {"content": "", "finish_reason": "content_filter"},
    ],
    ids=["refusal-field", "content-filter"],
)
async def test_refusals_are_errors(fake_llm_server: FakeLLMServer, reply: dict[str, Any], llm: MakeLLM) -> None:
    fake_llm_server.enqueue(**reply)
    with pytest.raises(ProviderError, match="refused|content filter"):
        await ask(llm(fake_llm_server.base_url))


@pytest.mark.anyio
async def test_a_content_policy_rejection_is_an_error(fake_llm_server: FakeLLMServer, llm: MakeLLM) -> None:
    # OpenAI's wording, which litellm recognises as a content-policy violation.
    fake_llm_server.enqueue("Invalid prompt: your prompt was flagged as potentially violating our usage policy.",
                            status=400)
    adapter = llm(fake_llm_server.base_url)
    with pytest.raises(ProviderError, match="content policy"):
        await ask(adapter)
    assert adapter.mode is OutputMode.JSON_SCHEMA


@pytest.mark.anyio
@pytest.mark.parametrize("content", [None, "", "  \n"], ids=["null", "empty", "blank"])
async def test_an_empty_answer_is_an_error(fake_llm_server: FakeLLMServer, content: str | None, llm: MakeLLM) -> None:
    fake_llm_server.enqueue(content)
    with pytest.raises(ProviderError, match="empty"):
        await ask(llm(fake_llm_server.base_url))


@pytest.mark.anyio
@pytest.mark.parametrize("body", ["{not json", '{"id": "x"}', ""], ids=["malformed", "no-choices", "no-body"])
async def test_an_unreadable_response_is_an_error(fake_llm_server: FakeLLMServer, body: str, llm: MakeLLM) -> None:
    fake_llm_server.enqueue(body=body)
    with pytest.raises(ProviderError) as caught:
        await ask(llm(fake_llm_server.base_url))
    assert_no_secret(caught.value)


def _bad_request(kind: type[Exception], message: str) -> Exception:
    return kind(message=message, model="fake-model", llm_provider="openai")


@pytest.mark.parametrize(
    ("error", "refused"),
    [
        (litellm.UnsupportedParamsError(message="openai does not support parameters: ['response_format']"), True),
        (_bad_request(litellm.BadRequestError, "Either json_schema or grammar can be specified, not both"), True),
        (_bad_request(litellm.BadRequestError, "messages: field required"), False),
        (_bad_request(litellm.ContextWindowExceededError, "maximum context length; response_format"), False),
        (litellm.RateLimitError(message="response_format quota", model="m", llm_provider="openai"), False),
    ],
    ids=["unsupported-param", "llama-cpp-grammar", "other-400", "context-window", "rate-limit"],
)
def test_only_a_refusal_of_the_format_option_counts_as_one(error: Exception, refused: bool) -> None:
    assert refuses_output_format(error) is refused


def test_the_key_stays_out_of_the_repr(llm: MakeLLM) -> None:
    assert API_KEY not in repr(llm("http://127.0.0.1:9/v1"))


# Runs in a fresh interpreter: every way out to the network is replaced by one that records
# the attempt and fails, a `.env` file sits in the working directory, and the proxies point at
# a closed loopback port in case anything slips past the socket patch.
_IMPORT_PROBE = """
import json, os, socket, sys, threading, time
attempts = []
def refuse(*args, **kwargs):
    attempts.append(repr(args[-1] if args else kwargs)[:200])
    raise OSError("network blocked by the import test")
socket.socket.connect = lambda self, address: refuse(address)
socket.socket.connect_ex = lambda self, address: refuse(address)
socket.create_connection = lambda address, *a, **k: refuse(address)
socket.getaddrinfo = lambda host, *a, **k: refuse(host)
import importlib
importlib.import_module(sys.argv[1])
time.sleep(0.5)  # give any background fetch thread the time to try
print(json.dumps({
    "attempts": attempts,
    "threads": [t.name for t in threading.enumerate() if t is not threading.main_thread()],
    "dotenv": os.environ.get("FIRMSIFT_DOTENV_PROBE"),
    "session": repr(getattr(sys.modules.get("litellm"), "aclient_session", None)),
}))
"""


def _import_in_a_sealed_process(module: str, cwd: Path) -> dict[str, Any]:
    (cwd / ".env").write_text("FIRMSIFT_DOTENV_PROBE=loaded\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_")}
    env.update(HTTP_PROXY="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9", NO_PROXY="")
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_PROBE, module],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_importing_the_adapter_touches_no_network(tmp_path: Path) -> None:
    seen = _import_in_a_sealed_process("firmsift.adapters.llm.litellm_llm", tmp_path)
    assert seen["attempts"] == []
    assert seen["threads"] == []
    assert seen["dotenv"] is None, "litellm must not load a .env file into the service's environment"
    assert seen["session"] == "None", "an HTTP client is made with an adapter (which closes it), never at import"


def test_the_import_probe_does_catch_a_bare_litellm_import(tmp_path: Path) -> None:
    """Control: without the adapter's set-up litellm fetches its cost map, and the probe sees it."""
    seen = _import_in_a_sealed_process("litellm", tmp_path)
    assert seen["attempts"], "the probe saw nothing: the no-network test above would prove nothing"


@pytest.fixture
def server_process(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    log = tmp_path / "llm-calls.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.fake_llm_server", "--port", "0", "--log", str(log)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        yield f"http://127.0.0.1:{port}/v1", log
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.mark.anyio
async def test_the_standalone_server_answers_by_domain_and_logs_each_call(
    server_process: tuple[str, Path],
    llm: MakeLLM,
) -> None:
    base_url, log = server_process
    adapter = llm(base_url)

    food = await adapter.complete("Answer is_cpg.", "Domain: acme-snacks.com", json_schema=CPG_SCHEMA)
    bank = await adapter.complete("Answer is_cpg.", "Domain: firstbank.com", json_schema=CPG_SCHEMA)

    assert json.loads(food.text)["is_cpg"] is True
    assert json.loads(bank.text) == {
        "is_cpg": False, "confidence": 4, "reasoning": "fake answer for firstbank.com",
    }
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [line["domain"] for line in lines] == ["acme-snacks.com", "firstbank.com"]


# --- real servers' refusals, replayed from tests/fixtures/providers ------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    "fixture",
    ["llama-cpp-python-json-schema-refused", "llama-cpp-server-json-schema-refused-2024",
     "llama-cpp-server-type-refused", "vllm-xgrammar-schema-refused"],
)
async def test_a_real_servers_refusal_of_json_schema_falls_back_whatever_its_status(fixture: str, llm: MakeLLM) -> None:
    fake = FakeLLMServer(refuse={"json_schema": load_fixture(fixture)})
    with fake as base_url:
        adapter = llm(base_url)
        first = await ask(adapter)
        second = await ask(adapter)

    assert first.text and second.text
    assert [r.format_kind for r in fake.requests] == ["json_schema", "json_object+schema", "json_object+schema"]
    assert adapter.mode is OutputMode.JSON_OBJECT_WITH_SCHEMA


@pytest.mark.anyio
async def test_llama_cpp_pythons_own_500_that_is_not_about_the_format_is_a_transient_provider_error(
    llm: MakeLLM,
) -> None:
    fake = FakeLLMServer(refuse={"json_schema": load_fixture("llama-cpp-python-decode-failed")})
    with fake as base_url:
        adapter = llm(base_url)
        with pytest.raises(ProviderError) as caught:
            await ask(adapter)

    assert len(fake.requests) == 1
    assert adapter.mode is OutputMode.JSON_SCHEMA
    assert caught.value.retryable and caught.value.cause is FailureCause.PROVIDER_ERROR
    assert "HTTP 500" in str(caught.value) and "llama_decode returned -3" in str(caught.value)


@pytest.mark.anyio
async def test_the_fallback_is_remembered_per_model_and_api_base_across_adapters(
    llm: MakeLLM, adapter_class: type[LadderedLLM],
) -> None:
    memory = FormatMemory()
    fake = FakeLLMServer(refuse={"json_schema": load_fixture("llama-cpp-python-json-schema-refused")})
    with fake as base_url:
        await ask(llm(base_url, formats=memory))
        await ask(llm(base_url + "/", formats=memory))  # the same server, spelled with a slash
        other_model = adapter_class("openai/other-model", api_base=base_url, api_key=API_KEY, formats=memory)
        await ask(other_model)

    assert [r.format_kind for r in fake.requests] == [
        "json_schema", "json_object+schema",  # the first adapter learns
        "json_object+schema",  # a second adapter for the same model and server starts there
        "json_schema", "json_object+schema",  # another model on that server asks for itself
    ]


@pytest.mark.anyio
async def test_the_switch_is_logged_once_however_many_calls_were_refused_at_once(
    caplog: pytest.LogCaptureFixture,
    llm: MakeLLM,
) -> None:
    fake = FakeLLMServer(refuse={"json_schema": load_fixture("llama-cpp-python-json-schema-refused")})
    with fake as base_url, caplog.at_level("WARNING"):
        adapter = llm(base_url)
        async with anyio.create_task_group() as calls:
            for _ in range(4):
                calls.start_soon(ask, adapter)

    switches = [r for r in caplog.records if "refused a response format" in r.getMessage()]
    assert len(switches) == 1
    assert switches[0].refused == "json_schema" and switches[0].using == "json_object with schema"
    assert "Input should be 'text' or 'json_object'" in switches[0].reason


@pytest.mark.anyio
async def test_lm_studio_refusing_json_object_when_that_format_is_pinned_names_the_setting(llm: MakeLLM) -> None:
    fake = FakeLLMServer(refuse={"json_object": load_fixture("lm-studio-json-object-refused")})
    with fake as base_url:
        with pytest.raises(ProviderError) as caught:
            await ask(llm(base_url, response_format="json_object"))

    assert [r.format_kind for r in fake.requests] == ["json_object+schema", "json_object"]
    error = caught.value
    assert error.cause is FailureCause.FORMAT_REFUSED and not error.retryable
    assert "FIRMSIFT_LLM_RESPONSE_FORMAT=json_object" in str(error)
    assert "'response_format.type' must be 'json_schema' or 'text'" in str(error)


@pytest.mark.anyio
async def test_lm_studio_is_asked_for_json_schema_first_and_never_for_json_object(llm: MakeLLM) -> None:
    fake = FakeLLMServer(refuse={"json_object": load_fixture("lm-studio-json-object-refused")})
    with fake as base_url:
        await ask(llm(base_url))
    assert [r.format_kind for r in fake.requests] == ["json_schema"]


@pytest.mark.anyio
@pytest.mark.parametrize(("setting", "kinds"), [("json_schema", ["json_schema"]), ("text", ["none"])])
async def test_a_pinned_format_is_the_only_one_sent(setting: str, kinds: list[str], llm: MakeLLM) -> None:
    fake = FakeLLMServer(refuse={"json_schema": load_fixture("llama-cpp-python-json-schema-refused")})
    with fake as base_url:
        adapter = llm(base_url, response_format=setting)
        if setting == "json_schema":
            with pytest.raises(ProviderError, match="refused response_format json_schema") as caught:
                await ask(adapter)
            assert not caught.value.retryable, "a 500 refusal comes back the same: no retry"
            assert caught.value.cause is FailureCause.FORMAT_REFUSED
        else:
            await ask(adapter)
    assert [r.format_kind for r in fake.requests] == kinds


def test_an_unknown_response_format_setting_is_refused(llm: MakeLLM) -> None:
    with pytest.raises(ValueError, match="auto, json_schema, json_object, text"):
        llm("http://127.0.0.1:9/v1", response_format="xml")


# --- failures that name their cause ---------------------------------------------------------


@pytest.mark.anyio
async def test_missing_credentials_name_both_variables_and_make_no_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    calls: list[Any] = []

    async def record(**options: Any) -> None:
        calls.append(options)

    monkeypatch.setattr(litellm, "acompletion", record)
    with pytest.raises(ProviderError) as caught:
        await ask(LiteLLM("gpt-4o-mini", formats=FormatMemory()))

    message = str(caught.value)
    assert caught.value.cause is FailureCause.MISSING_CREDENTIALS and not caught.value.retryable
    assert "FIRMSIFT_LLM_API_KEY" in message and "OPENAI_API_KEY" in message
    assert "HTTP" not in message
    assert calls == []


@pytest.mark.anyio
async def test_a_refused_connection_names_the_host_and_no_http_status(llm: MakeLLM) -> None:
    fake = FakeLLMServer()
    base_url, host = fake.base_url, f"127.0.0.1:{fake.port}"
    fake.stop()

    with pytest.raises(ProviderError) as caught:
        await ask(llm(base_url))
    assert caught.value.cause is FailureCause.UNREACHABLE and caught.value.retryable
    assert f"connection refused by {host}" in str(caught.value)
    assert "HTTP" not in str(caught.value) and "500" not in str(caught.value)


@pytest.mark.anyio
async def test_tls_to_a_plain_http_server_is_a_tls_failure_not_retried(
        fake_llm_server: FakeLLMServer, llm: MakeLLM) -> None:
    with pytest.raises(ProviderError) as caught:
        await ask(llm(fake_llm_server.base_url.replace("http://", "https://")))
    assert caught.value.cause is FailureCause.UNREACHABLE and not caught.value.retryable
    assert "TLS failed with 127.0.0.1" in str(caught.value)
    assert "HTTP" not in str(caught.value)


@pytest.mark.anyio
async def test_a_timeout_on_a_local_server_is_not_retryable_when_so_configured(
    fake_llm_server: FakeLLMServer, llm: MakeLLM,
) -> None:
    fake_llm_server.enqueue(ANSWER, delay=10)
    with pytest.raises(ProviderError) as caught:
        await ask(llm(fake_llm_server.base_url, timeout=0.3, retry_timeouts=False))
    assert caught.value.cause is FailureCause.TIMEOUT and not caught.value.retryable
    assert "local server would still be busy" in str(caught.value)


@pytest.mark.anyio
async def test_a_long_provider_message_is_cut_between_words(fake_llm_server: FakeLLMServer, llm: MakeLLM) -> None:
    fake_llm_server.enqueue("word " * 200 + "end", status=400)
    with pytest.raises(ProviderError) as caught:
        await ask(llm(fake_llm_server.base_url))
    message = str(caught.value)
    assert message.endswith("word…")
    assert len(message) < 500


@pytest.mark.parametrize(
    ("cause", "sentence", "transient"),
    [
        (socket.gaierror(-2, "Name or service not known"), "could not resolve host llm.example.com (DNS)", True),
        (ConnectionRefusedError(111, "Connection refused"), "connection refused by llm.example.com", True),
        (ssl.SSLCertVerificationError(1, "certificate verify failed"), "TLS failed with llm.example.com", False),
    ],
    ids=["dns", "refused", "tls"],
)
def test_transport_failures_under_litellms_made_up_500_are_named(cause: Exception, sentence: str,
                                                                 transient: bool) -> None:
    """litellm reports each of these as "InternalServerError ... Connection error." with status 500."""
    from firmsift.adapters.llm.failures import classify, is_transient

    wrapper = openai.APIConnectionError(request=httpx.Request("POST", "https://llm.example.com/v1"))
    wrapper.__cause__ = cause
    error = litellm.InternalServerError(message="OpenAIException - Connection error.", model="m",
                                        llm_provider="openai")
    error.__cause__ = wrapper
    found, text = classify(error, "llm.example.com")
    assert found is FailureCause.UNREACHABLE
    assert sentence in text and "HTTP" not in text and "500" not in text
    assert is_transient(error) is transient

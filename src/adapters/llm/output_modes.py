"""The ways to ask an OpenAI-compatible server for JSON, and which one each (model, API base) accepted."""

from __future__ import annotations

import enum
import re
import threading
from typing import Any

RESPONSE_FORMAT_SETTINGS = ("auto", "json_schema", "json_object", "text")
_SCHEMA_NAME = re.compile(r"[^A-Za-z0-9_-]")


class OutputMode(enum.IntEnum):
    """Ways to ask for JSON, from most to least constrained; a refusal moves to the next one."""

    JSON_SCHEMA = 0  # OpenAI structured outputs (also vLLM, LM Studio, Ollama, llama.cpp today)
    JSON_OBJECT_WITH_SCHEMA = 1  # llama.cpp's server and llama-cpp-python: json_object + "schema"
    JSON_OBJECT = 2  # plain JSON mode
    NONE = 3  # the prompt and the defensive parser do all the work

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {OutputMode.JSON_SCHEMA: "json_schema", OutputMode.JSON_OBJECT_WITH_SCHEMA: "json_object with schema",
           OutputMode.JSON_OBJECT: "json_object", OutputMode.NONE: "text (no response_format)"}
# FIRMSIFT_LLM_RESPONSE_FORMAT -> the first and last mode tried.
_RANGES = {"auto": (OutputMode.JSON_SCHEMA, OutputMode.NONE),
           "json_schema": (OutputMode.JSON_SCHEMA, OutputMode.JSON_SCHEMA),
           "json_object": (OutputMode.JSON_OBJECT_WITH_SCHEMA, OutputMode.JSON_OBJECT),
           "text": (OutputMode.NONE, OutputMode.NONE)}


def modes_for(setting: str) -> tuple[OutputMode, OutputMode]:
    """The first and last output mode a response-format setting allows: `auto` all of them, a
    named format only itself (`json_object`: with the schema attached, then without)."""
    try:
        return _RANGES[setting]
    except KeyError:
        raise ValueError(f"response format must be one of {', '.join(RESPONSE_FORMAT_SETTINGS)}, "
                         f"not {setting!r}") from None


def response_format(mode: OutputMode, json_schema: dict[str, Any]) -> dict[str, Any] | None:
    """The `response_format` request field for one output mode."""
    if mode is OutputMode.JSON_SCHEMA:
        name = _SCHEMA_NAME.sub("_", str(json_schema.get("title") or "answer"))[:64]
        return {"type": "json_schema", "json_schema": {"name": name, "schema": json_schema, "strict": True}}
    if mode is OutputMode.JSON_OBJECT_WITH_SCHEMA:
        return {"type": "json_object", "schema": json_schema}
    if mode is OutputMode.JSON_OBJECT:
        return {"type": "json_object"}
    return None


class FormatMemory:
    """The least constrained output mode each (model, API base) has needed so far.

    Shared by every adapter of a process (a worker's, each eval candidate's, `llm check`'s), so a
    server that refused a format is not asked for it again by anyone. Only ever moves down the
    list: a refusal is a property of the server, not of one request.
    """

    def __init__(self) -> None:
        self._modes: dict[tuple[str, str], OutputMode] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> OutputMode | None:
        with self._lock:
            return self._modes.get(key)

    def advance(self, key: tuple[str, str], mode: OutputMode) -> bool:
        """Remember that `key` needs `mode` or a later one; True when this changed what was known
        (so the change is logged once, however many calls were refused at the same time)."""
        with self._lock:
            known = self._modes.get(key)
            if known is not None and known >= mode:
                return False
            self._modes[key] = mode
            return True


FORMAT_MEMORY = FormatMemory()  # the process-wide memory; holds no connection, only what servers said

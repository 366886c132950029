"""Which client serves the configured model: the direct OpenAI-compatible client (openai_chat.py)
for the models litellm would send to OpenAI's chat-completions API as they are, litellm for
every other provider. Decided without importing litellm (it costs seconds of CPU and ~120 MB),
from the model's name and litellm's bundled model map read as a file; when unsure, litellm."""

from __future__ import annotations

import functools
import json
import re

from firmsift.adapters.llm.price_map import price_map_path

LLM_CLIENTS = ("auto", "litellm")  # FIRMSIFT_LLM_CLIENT
OPENAI_PREFIX = "openai/"
# Families litellm sends somewhere else or rewrites the request of (audio, search, realtime
# models; the o-series, whose system message it may turn into a user message).
_NOT_PLAIN_CHAT = ("audio", "search", "realtime", "transcribe", "tts", "image", "codex")
_O_SERIES = re.compile(r"o[0-9]")
# litellm's reasoning series (gpt_reasoning_transformation.py): max_tokens is sent as
# max_completion_tokens, and a temperature other than 1 depends on the model map's reasoning rows.
_REASONING_MARKERS = ("gpt-5", "gpt-6")


def openai_chat_model(model: str) -> str | None:
    """The name `model` has at OpenAI's chat-completions API when litellm would send it there
    with no rewriting beyond what the direct client does; None otherwise.

    `openai/<name>` is any model of an OpenAI-compatible server (litellm strips the prefix), unless
    litellm's map says <name> is served some other way (a Responses-API-only model); a bare name
    must be one of OpenAI's chat models in the map, as litellm requires to route it to OpenAI.
    """
    if model.startswith(OPENAI_PREFIX):
        name = model.removeprefix(OPENAI_PREFIX)
        row = _chat_rows().get(name)
        if not name or (row is not None and row[1] != "chat"):
            return None
    else:
        name = model
        if _chat_rows().get(name) != ("openai", "chat"):
            return None
    lower = name.lower()
    if _O_SERIES.match(lower) or lower.startswith("ft:") or any(word in lower for word in _NOT_PLAIN_CHAT):
        return None
    return name


def is_reasoning_series(name: str) -> bool:
    """True for the models litellm asks with max_completion_tokens (gpt-5 and later, not gpt-5-chat)."""
    return any(marker in name for marker in _REASONING_MARKERS) and "gpt-5-chat" not in name.split("/")[-1]


def uses_direct_client(model: str, *, temperature: float | None, setting: str = "auto") -> bool:
    """True when the direct client serves `model` under FIRMSIFT_LLM_CLIENT=`setting`: `auto`
    for OpenAI's chat completions, `litellm` never. A reasoning model with a temperature other
    than 1 stays with litellm, whose rule for it reads the model map's reasoning rows."""
    if setting not in LLM_CLIENTS:
        raise ValueError(f"LLM client must be one of {', '.join(LLM_CLIENTS)}, not {setting!r}")
    if setting == "litellm":
        return False
    name = openai_chat_model(model)
    if name is None:
        return False
    return not (is_reasoning_series(name) and temperature is not None and temperature != 1)


@functools.cache
def _chat_rows() -> dict[str, tuple[str | None, str | None]]:
    """Each model of litellm's bundled map: (its provider, its mode), read once per process."""
    path = price_map_path()
    if path is None:
        return {}
    with path.open(encoding="utf-8") as file:
        entries = json.load(file)
    return {name: (row.get("litellm_provider"), row.get("mode")) for name, row in entries.items()
            if isinstance(row, dict)}

"""How many LLM calls one worker makes at once (the worker's semaphore, and the dry run's estimate)."""

from __future__ import annotations

import logging

from firmsift.adapters.llm.endpoint import is_local_api_base
from firmsift.entrypoints.settings import Settings

log = logging.getLogger(__name__)


def llm_concurrency(settings: Settings) -> int:
    """How many LLM calls one worker makes at once: FIRMSIFT_LLM_CONCURRENCY when set or when the
    LLM is a provider's; toward a local server, what it serves at once (llama.cpp's total_slots),
    else 1. A call beyond what the server serves waits in its queue with its time limit running
    (two lists at once against llama-cpp-python left 21 rows failed, timed out); here it waits
    in the worker's queue, where none runs."""
    if "llm_concurrency" in settings.model_fields_set or not is_local_api_base(settings.llm_api_base):
        return settings.llm_concurrency
    assert settings.llm_api_base is not None
    from firmsift.adapters.llm.served_slots import served_slots  # httpx: only toward a local server

    slots = served_slots(settings.llm_api_base)
    said = (f"serves {slots} calls at once (its total_slots): a worker makes {slots} at once" if slots else
            "does not say how many calls it serves at once (no llama.cpp /props): a worker makes one at a time")
    log.info(f"the LLM is a local server that {said}; FIRMSIFT_LLM_CONCURRENCY sets another number")
    return slots or 1

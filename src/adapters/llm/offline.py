"""litellm, imported with everything that would reach the network or the disk behind our back turned off."""

from __future__ import annotations

import logging
import os

# litellm reads these at import time, so they are set before the import below.
# Each one stops litellm from reaching the network (or the disk) behind the service's back:
# - the model cost map is fetched from GitHub at import (with retries in a background thread);
# - offline mode also keeps the blog feed, Anthropic beta-header config and Hugging Face
#   tokenizers from being fetched on first use;
# - in its default DEV mode litellm loads a `.env` file found near the process into os.environ.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["LITELLM_OFFLINE_MODE"] = "true"
os.environ["LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS"] = "True"
os.environ.setdefault("LITELLM_MODE", "PRODUCTION")

import litellm  # noqa: E402 - must follow the environment set-up above

# No callbacks: nothing is sent to logging/observability services; the service logs for itself.
litellm.callbacks = []
litellm.success_callback = []
litellm.failure_callback = []
litellm.input_callback = []
litellm.drop_params = False  # LITELLM_DROP_PARAMS would silently drop a refused response_format
litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banner printed on every error
for _logger in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
    logging.getLogger(_logger).setLevel(logging.WARNING)

__all__ = ["litellm"]

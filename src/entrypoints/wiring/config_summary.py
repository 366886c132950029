"""The one log line each process starts with: the configuration it really runs with, no secrets."""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import urlsplit

from firmsift.adapters.llm.endpoint import api_base_host, is_local_api_base
from firmsift.entrypoints.http.auth import UnsafeAuthSetting, auth_required
from firmsift.entrypoints.wiring.database_file import describe_database
from firmsift.entrypoints.settings import Settings

log = logging.getLogger("firmsift.startup")


def effective_configuration(settings: Settings, command: str, host: str | None = None) -> dict[str, str]:
    """What a process runs with, as log fields. Hosts only, never a key, a password or a query
    string: the LLM API base by host and port, the database with its password hidden. `host` is
    the address an API listens on (auth depends on it); None for a process serving no API."""
    fields = {
        "command": command,
        "model": settings.llm_model,
        "llm_api_base": api_base_host(settings.llm_api_base) if settings.llm_api_base else "the provider's default",
        "llm_prices": llm_prices(settings),
        "search_provider": settings.search_provider,
        "precheck": (f"on (DNS {', '.join(settings.dns_server_list) or 'system'}"
                     f"{f':{settings.dns_port}' if settings.dns_server_list else ''}, outcomes kept "
                     f"{settings.precheck_ttl_days:g} days)" if settings.precheck else "off"),
        "database": describe_database(settings.database_url),
        "queue": (f"sqs {queue_address(settings.sqs_queue_url) if settings.sqs_queue_url else settings.queue_name}"
                  if settings.queue_backend == "sqs" else f"db {settings.queue_name}"),
    }
    if host is not None:
        fields["auth"] = auth_mode(settings.auth, host)
    return fields


def llm_prices(settings: Settings) -> str:
    """Where the model's token prices come from (make_worker_pricing's rule), so an operator
    sees at start-up why costs will read as unknown."""
    prices = settings.llm_prices
    if prices is not None:
        return f"configured: {prices[0]:g} USD in, {prices[1]:g} USD out per million tokens"
    if is_local_api_base(settings.llm_api_base):
        return "none for a local API base: costs unknown (set FIRMSIFT_LLM_INPUT/OUTPUT_COST_PER_MILLION)"
    return "litellm's local price map (unknown for a model it lacks)"


def queue_address(url: str) -> str:
    """An SQS queue URL as host and path (account and queue name): nothing else."""
    return (api_base_host(url) or "?") + urlsplit(url).path


def auth_mode(mode: str, host: str) -> str:
    try:
        required = auth_required(mode, host)
    except UnsafeAuthSetting:
        return f"{mode} (refused on {host})"
    return f"{mode}: API keys {'required' if required else 'not required'} on {host}"


def log_effective_configuration(settings: Settings, command: str, host: str | None = None) -> None:
    log.info("effective configuration", extra=effective_configuration(settings, command, host))


def announce_new_database(path: Path) -> None:
    """Say where a new SQLite database is created: a relative default lands in the current directory."""
    log.warning("creating a new database", extra={"path": str(path)})

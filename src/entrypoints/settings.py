"""Settings from FIRMSIFT_* environment variables, or a TOML file named by FIRMSIFT_CONFIG_FILE: the
checks on them, the values derived from them and where they are read from (the fields: settings_fields.py)."""

from __future__ import annotations

import ipaddress
import os
from datetime import timedelta
from pathlib import Path

from pydantic import field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, TomlConfigSettingsSource

from firmsift.domain.allowed_hosts import InvalidAllowedHosts, parse_allowed_hosts
from firmsift.domain.pinned_hosts import InvalidPinnedHosts, PinnedHosts, parse_pinned_hosts
from firmsift.domain.search_providers import InvalidSearchProviders, chain_name, parse_search_providers
from firmsift.entrypoints.settings_fields import SettingsFields

CONFIG_FILE_VARIABLE = "FIRMSIFT_CONFIG_FILE"
# The databases firmsift runs on, with the drivers it ships (pysqlite, psycopg 3); a URL naming
# another would fail later with a bare ModuleNotFoundError or SQL the server does not speak.
SUPPORTED_DATABASE_SCHEMES = ("sqlite", "sqlite+pysqlite", "postgresql", "postgres", "postgresql+psycopg")


class ConfigurationError(ValueError):
    """The configuration cannot be used as given (exit code 2); the message says what to fix."""


class Settings(SettingsFields):
    """Every setting (declared in SettingsFields), checked alone and together, with the values derived
    from them. Environment variables win over the config file."""

    @field_validator("daily_spend_limit_usd", "allowed_hosts", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("allowed_hosts")
    @classmethod
    def _allowed_hosts_are_names(cls, value: str | None) -> str | None:
        try:
            if value is not None:
                parse_allowed_hosts(value)
        except InvalidAllowedHosts as error:
            raise ValueError(str(error)) from None
        return value

    @field_validator("database_url")
    @classmethod
    def _database_is_supported(cls, url: str) -> str:
        scheme, separator, _ = url.partition("://")
        if not separator:
            raise ValueError("not a database URL: expected sqlite:///path/to/file.db or "
                             "postgresql://user:password@host:5432/database")
        if scheme.lower() not in SUPPORTED_DATABASE_SCHEMES:
            # Only the scheme is echoed: the rest of the URL may hold a password.
            raise ValueError(f"unsupported database {scheme!r}: firmsift runs on SQLite (sqlite:///path/to/file.db) "
                             "or PostgreSQL (postgresql://user:password@host:5432/database)")
        return url

    @field_validator("search_provider")
    @classmethod
    def _search_providers_are_known(cls, value: str) -> str:
        try:
            return chain_name(parse_search_providers(value))
        except InvalidSearchProviders as error:
            raise ValueError(str(error)) from None

    @model_validator(mode="after")
    def _providers_are_configured(self) -> Settings:
        needs = {"searxng": ("searxng_url", self.searxng_url), "tavily": ("tavily_api_key", self.tavily_api_key),
                 "brave": ("brave_api_key", self.brave_api_key)}
        missing = [f"FIRMSIFT_{needs[p][0].upper()}" for p in self.search_providers if p in needs and not needs[p][1]]
        if missing:
            raise ValueError(f"search_provider={self.search_provider} needs {' and '.join(missing)} to be set")
        return self

    @field_validator("homepage_resolve")
    @classmethod
    def _pinned_hosts_are_valid(cls, value: str | None) -> str | None:
        try:
            parse_pinned_hosts(value or "")
        except InvalidPinnedHosts as error:
            raise ValueError(str(error)) from None
        return value

    @field_validator("dns_servers")
    @classmethod
    def _dns_servers_are_addresses(cls, value: str | None) -> str | None:
        for server in (part.strip() for part in (value or "").split(",") if part.strip()):
            try:
                ipaddress.ip_address(server)
            except ValueError:
                raise ValueError(f"{server[:60]!r} is not an IP address") from None
        return value

    @field_validator("dns_canaries")
    @classmethod
    def _dns_canaries_are_names(cls, value: str) -> str:
        for name in (part.strip() for part in value.split(",") if part.strip()):
            labels = name.rstrip(".").split(".")
            if len(name) > 253 or len(labels) < 2 or not all(0 < len(label) <= 63 for label in labels):
                raise ValueError(f"{name[:60]!r} is not a domain name (such as example.com)")
        return value

    @model_validator(mode="after")
    def _pinned_hosts_need_private_addresses(self) -> Settings:
        if self.pinned_hosts and not self.homepage_allow_private_addresses:
            raise ValueError("FIRMSIFT_HOMEPAGE_RESOLVE is honoured only with "
                             "FIRMSIFT_HOMEPAGE_ALLOW_PRIVATE_ADDRESSES=true (it is for tests and intranets)")
        return self

    @model_validator(mode="after")
    def _prices_come_in_pairs(self) -> Settings:
        if (self.llm_input_cost_per_million is None) != (self.llm_output_cost_per_million is None):
            raise ValueError("set both FIRMSIFT_LLM_INPUT_COST_PER_MILLION and FIRMSIFT_LLM_OUTPUT_COST_PER_MILLION "
                             "(USD per million tokens), or neither to use litellm's price map")
        return self

    @property
    def llm_prices(self) -> tuple[float, float] | None:
        """The configured (input, output) USD per million tokens of llm_model, or None."""
        if self.llm_input_cost_per_million is None or self.llm_output_cost_per_million is None:
            return None
        return self.llm_input_cost_per_million, self.llm_output_cost_per_million

    @model_validator(mode="after")
    def _sqs_queue_is_fifo(self) -> Settings:
        if self.queue_backend == "sqs" and not self.sqs_queue_url and not self.queue_name.endswith(".fifo"):
            raise ValueError("queue_backend=sqs needs a FIFO queue: set FIRMSIFT_QUEUE_NAME to a name ending in "
                             ".fifo or FIRMSIFT_SQS_QUEUE_URL")
        return self

    @property
    def evidence_reuse_age(self) -> timedelta | None:
        """How recent reusable evidence must be; None when reuse is off."""
        return timedelta(days=self.evidence_reuse_days) if self.evidence_reuse_days > 0 else None

    @property
    def search_providers(self) -> tuple[str, ...]:
        """The search providers to ask, in order (search_provider is already checked and canonical)."""
        return tuple(self.search_provider.split(","))

    @property
    def pinned_hosts(self) -> PinnedHosts:
        """FIRMSIFT_HOMEPAGE_RESOLVE, parsed (already checked)."""
        return parse_pinned_hosts(self.homepage_resolve or "")

    @property
    def dns_canary_list(self) -> tuple[str, ...]:
        return tuple(part.strip() for part in self.dns_canaries.split(",") if part.strip())

    @property
    def dns_server_list(self) -> tuple[str, ...]:
        return tuple(part.strip() for part in (self.dns_servers or "").split(",") if part.strip())

    @property
    def dead_letter_queue(self) -> str:
        if self.dead_letter_queue_name:
            return self.dead_letter_queue_name
        base, fifo, _ = self.queue_name.partition(".fifo")
        return f"{base}-dlq{fifo}"

    @property
    def work_queue(self) -> str:
        """The work queue as the SQS adapter wants it: its URL if given, else its name."""
        return self.sqs_queue_url or self.queue_name

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        config_file = os.environ.get(CONFIG_FILE_VARIABLE)
        if config_file:
            path = Path(config_file)
            if not path.is_file():
                raise ConfigurationError(f"{CONFIG_FILE_VARIABLE}={config_file}: no such file")
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)

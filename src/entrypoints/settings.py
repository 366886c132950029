"""Settings from FIRMSIFT_* environment variables, or a TOML file named by FIRMSIFT_CONFIG_FILE."""

from __future__ import annotations

import ipaddress
import os
from datetime import timedelta
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict, TomlConfigSettingsSource

from firmsift.domain.pinned_hosts import InvalidPinnedHosts, PinnedHosts, parse_pinned_hosts
from firmsift.domain.search_providers import InvalidSearchProviders, chain_name, parse_search_providers

CONFIG_FILE_VARIABLE = "FIRMSIFT_CONFIG_FILE"
# The databases firmsift runs on, with the drivers it ships (pysqlite, psycopg 3); a URL naming
# another would fail later with a bare ModuleNotFoundError or SQL the server does not speak.
SUPPORTED_DATABASE_SCHEMES = ("sqlite", "sqlite+pysqlite", "postgresql", "postgres", "postgresql+psycopg")


class ConfigurationError(ValueError):
    """The configuration cannot be used as given (exit code 2); the message says what to fix."""


class Settings(BaseSettings):
    """Every setting, documented in the README. Environment variables win over the config file."""

    model_config = SettingsConfigDict(env_prefix="FIRMSIFT_", extra="forbid", validate_default=True)

    database_url: str = Field("sqlite:///firmsift-data/firmsift.db", description="SQLAlchemy URL")
    queue_backend: Literal["db", "sqs"] = Field("db", description="work queue backend: db (in the database) or sqs")
    queue_name: str = Field("firmsift-jobs", pattern=r"^[A-Za-z0-9_-]{1,75}(\.fifo)?$")
    dead_letter_queue_name: str | None = Field(None, description="default: <queue_name>-dlq[.fifo]")
    sqs_queue_url: str | None = Field(None, description="SQS work queue URL (default: looked up from queue_name)")
    sqs_endpoint_url: str | None = Field(None, description="SQS endpoint, for an emulator or a VPC endpoint")
    aws_region: str | None = Field(None, description="AWS region (default: boto3's standard chain)")
    queues_file: Path = Field(Path("deploy/queues.toml"), description="declared SQS queues, for `queues ensure`")
    visibility_timeout: float = Field(120.0, gt=0, le=43200)
    wait_time: float = Field(5.0, ge=0, le=20)
    max_receives: int = Field(5, ge=1, le=1000)
    poll_interval: float = Field(0.5, gt=0, le=10)
    max_job_seconds: float = Field(900.0, gt=0, description="cap on how long a job may keep extending its lease")
    dead_letter_check_interval: float = Field(30.0, gt=0, description="how often workers look for dead letters")
    shutdown_grace_seconds: float = Field(30.0, ge=0, description="on SIGTERM, how long jobs in hand may finish")

    llm_model: str = "gpt-5.4-mini"
    llm_api_base: str | None = None
    llm_api_key: SecretStr | None = None
    llm_timeout: float = Field(60.0, gt=0)
    llm_max_tokens: int = Field(400, ge=16)
    llm_response_format: Literal["auto", "json_schema", "json_object", "text"] = Field(
        "auto", description="structured output to ask for: auto (negotiate, falling back on refusal) or one format")
    llm_concurrency: int = Field(8, ge=1, le=1024)
    llm_input_cost_per_million: float | None = Field(
        None, ge=0, allow_inf_nan=False, description="USD per million prompt tokens (default: litellm's price map)")
    llm_output_cost_per_million: float | None = Field(
        None, ge=0, allow_inf_nan=False, description="USD per million completion tokens (default: litellm's price map)")
    answer_lease_seconds: float = Field(20.0, gt=0, description="LLM lease length, renewed while the call runs")
    llm_retry_attempts: int = Field(4, ge=1, le=10, description="tries per LLM call, the first included")
    llm_deadline: float = Field(120.0, gt=0, description="seconds one LLM call may take, retries and waits included")
    llm_requests_per_minute: float = Field(0, ge=0, description="LLM requests a worker may start per minute; 0: no limit")
    search_retry_attempts: int = Field(3, ge=1, le=10, description="tries per search call, the first included")
    search_deadline: float = Field(30.0, gt=0, description="seconds one search call may take, retries included")
    search_requests_per_minute: float = Field(0, ge=0, description="search requests per minute per worker; 0: no limit")
    retry_base_delay: float = Field(0.5, ge=0, le=60, description="first backoff ceiling, doubled per retry (full jitter)")
    retry_max_delay: float = Field(20.0, ge=0, le=300, description="cap on the backoff ceiling")
    max_retry_after: float = Field(60.0, ge=0, le=600, description="a longer Retry-After fails the call at once")

    search_provider: str = Field(
        "homepage", description="a search provider, or several separated by commas, asked in that order")
    searxng_url: str | None = None
    tavily_api_key: SecretStr | None = None
    tavily_base_url: str = "https://api.tavily.com"
    brave_api_key: SecretStr | None = None
    brave_base_url: str = "https://api.search.brave.com"
    search_timeout: float = Field(10.0, gt=0)
    search_max_results: int = Field(5, ge=1, le=20)
    homepage_allow_private_addresses: bool = False
    homepage_resolve: str | None = Field(
        None, description="host=ip[:port] pairs, comma-separated: where the homepage reader connects for those "
                        "hosts (like curl --resolve); needs homepage_allow_private_addresses=true")

    precheck: bool = Field(True, description="look at DNS and the homepage before paying the LLM")
    precheck_ttl_days: float = Field(7.0, gt=0, le=365, description="days a no_dns/unreachable/parked outcome is kept")
    precheck_reuse_redirect_answer: bool = Field(
        False, description="a domain redirecting to one with a fresh answer takes that answer")
    dns_servers: str | None = Field(None, description="the pre-check's DNS servers (IP addresses, comma-separated); "
                                             "empty: the system's")
    dns_port: int = Field(53, ge=1, le=65535)
    dns_timeout: float = Field(4.0, gt=0, le=60, description="seconds one DNS query may take, retries included")
    evidence_reuse_days: float = Field(
        30.0, ge=0, le=365, description="days another classifier's evidence for a domain is reused instead of "
                                        "searching again; 0: always search")
    signatures_dir: Path | None = Field(None, description="folder of extra parking.toml / walls.toml signatures")

    max_domains_per_job: int = Field(10, ge=1, le=1000)
    max_body_bytes: int = Field(65536, ge=1024)
    max_domains_per_batch: int = Field(100_000, ge=1, description="unique domains in one POST /batches")
    max_batch_body_bytes: int = Field(64 * 1024 * 1024, ge=1024, description="largest POST /batches body, in bytes")
    backend_timeout: float = Field(5.0, gt=0, description="API: longest wait on the database or queue before a 503")
    max_header_bytes: int = Field(16384, ge=1024, le=1048576, description="largest accepted request headers, in bytes")
    header_timeout: float = Field(10.0, gt=0, le=300, description="seconds a client has to send a request's line and headers")
    body_timeout: float = Field(30.0, gt=0, le=600, description="seconds a client has to send a request body, once its headers are in")
    keep_alive_timeout: float = Field(5.0, gt=0, le=600, description="seconds an idle keep-alive connection stays open")
    max_connections: int = Field(1000, ge=1, description="open connections per API process; more are refused with 503")
    auth_failures_per_minute: int = Field(
        30, ge=0, description="requests with an unknown API key a minute per client address and process; 0: none")
    database_wait_seconds: float = Field(
        300.0, ge=0, description="api/serve/worker: how long to wait for an unreachable database at start-up")
    auth: Literal["auto", "required", "off"] = Field(
        "auto", description="API keys: auto (off when the API listens on loopback only), required, off (loopback only)")
    rate_limit_per_minute: int = Field(600, ge=0, description="requests a minute per API key, per API process; 0: none")
    daily_spend_limit_usd: float | None = Field(
        None, ge=0, le=1_000_000, allow_inf_nan=False,
        description="USD every key together may spend a UTC day (empty: no global limit)")
    budget_recheck_seconds: float = Field(
        300.0, gt=0, le=43200, description="how long a job paused by a spend limit waits before it is checked again")
    worker_jobs: int = Field(4, ge=1, le=256, description="jobs one worker processes at once")
    domain_concurrency: int = Field(10, ge=1, le=256, description="domains of one job processed at once")
    classifiers_dir: Path | None = None
    db_pool_size: int = Field(5, ge=1)
    db_max_overflow: int = Field(10, ge=0)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    worker_probe_port: int | None = Field(None, ge=0, le=65535, description="worker /healthz and /metrics port")
    worker_probe_host: str = "127.0.0.1"

    @field_validator("daily_spend_limit_usd", mode="before")
    @classmethod
    def _empty_limit_is_none(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

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

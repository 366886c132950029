"""Every FIRMSIFT_* setting: its name, type, default, bounds and description. The rules across
settings, the values derived from them and where they are read from are in settings.py."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class SettingsFields(BaseSettings):
    """Every setting with its default and bounds, documented in docs/reference/settings.md, generated from here (Settings adds the rules)."""

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
    llm_client: Literal["auto", "litellm"] = Field(
        "auto", description="auto: OpenAI's chat completions (OpenAI, openai/<model> servers) over a direct client, "
                            "litellm for other providers; litellm: always litellm")
    llm_unreadable_retries: int | None = Field(None, ge=0, le=5, description=(
        "times a model's output that cannot be read is asked again; unset: 2 toward a local server, "
        "0 toward a provider (each try is paid)"))
    llm_concurrency: int = Field(8, ge=1, le=1024, description=(
        "LLM calls one worker makes at once; unset, toward a local server: what it serves at once "
        "(llama.cpp's total_slots), else 1"))
    llm_input_cost_per_million: float | None = Field(
        None, ge=0, allow_inf_nan=False, description="USD per million prompt tokens (default: litellm's price map)")
    llm_output_cost_per_million: float | None = Field(
        None, ge=0, allow_inf_nan=False, description="USD per million completion tokens (default: litellm's price map)")
    answer_lease_seconds: float = Field(20.0, gt=0, description="LLM lease length, renewed while the call runs")
    economy_poll_seconds: float = Field(
        60.0, gt=0, le=3600, description="economy mode: seconds between a worker's looks at the provider's batches")
    economy_price_factor: float = Field(
        0.5, gt=0, le=1, allow_inf_nan=False,
        description="economy mode: the batch price as a share of the normal one, for a model litellm has no "
                    "batch price for (and for configured prices)")
    llm_retry_attempts: int = Field(4, ge=1, le=10, description="tries per LLM call, the first included")
    llm_deadline: float = Field(120.0, gt=0, description="seconds one LLM call may take, retries and waits included")
    llm_requests_per_minute: float = Field(0, ge=0, description="LLM requests all workers on the database may start per minute, "
                                         "a ceiling on the pacing learned from the provider; 0: none")
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
    dns_canaries: str = Field(
        "example.com,iana.org,wikipedia.org",
        description="names that must exist, comma-separated: while most of them do not resolve, the pre-check "
                    "ends no domain as no_dns; empty: the resolver is believed untested")
    dns_timeout: float = Field(4.0, gt=0, le=60, description="seconds one DNS query may take, retries included")
    evidence_reuse_days: float = Field(
        30.0, ge=0, le=365, description="days another classifier's evidence for a domain is reused instead of "
                                        "searching again; 0: always search")
    signatures_dir: Path | None = Field(None, description="folder of extra parking.toml / walls.toml signatures")

    max_domains_per_job: int = Field(10, ge=1, le=1000)
    max_body_bytes: int = Field(65536, ge=1024)
    max_domains_per_batch: int = Field(100_000, ge=1, description="unique domains in one POST /batches")
    max_batch_body_bytes: int = Field(64 * 1024 * 1024, ge=1024, description="largest POST /batches body, in bytes")
    max_csv_columns: int = Field(1000, ge=1, le=100_000, description="columns a batch's CSV header may have")
    # At most the csv module's own limit on one cell (131,072 characters).
    max_row_chars: int = Field(65536, ge=1024, le=131_072,
                               description="characters one batch row may have: a CSV record, a pasted line, "
                                           "a string in a JSON list")
    backend_timeout: float = Field(5.0, gt=0, description="API: longest wait on the database or queue before a 503")
    max_header_bytes: int = Field(16384, ge=1024, le=1048576, description="largest accepted request headers, in bytes")
    header_timeout: float = Field(10.0, gt=0, le=300, description="seconds a client has to send a request's line and headers")
    body_timeout: float = Field(30.0, gt=0, le=600, description="seconds a client has to send a request body, once its headers are in")
    upload_idle_timeout: float = Field(10.0, gt=0, le=600,
                                       description="an upload (POST /batches, the web app's) is cut after this many "
                                                   "seconds without a byte")
    min_upload_rate: int = Field(16384, ge=0, description="bytes a second an upload must average once "
                                                          "FIRMSIFT_BODY_TIMEOUT has passed; 0: no floor")
    keep_alive_timeout: float = Field(5.0, gt=0, le=600, description="seconds an idle keep-alive connection stays open")
    max_connections: int = Field(1000, ge=1, description="open connections per API process; more are refused with 503")
    auth_failures_per_minute: int = Field(
        30, ge=0, description="requests with an unknown API key a minute per client address and process; 0: none")
    sign_ins_per_minute: int = Field(
        10, ge=0, description="web app sign-in attempts a minute per client address and process; 0: none")
    database_wait_seconds: float = Field(
        300.0, ge=0, description="api/serve/worker: how long to wait for an unreachable database at start-up")
    auth: Literal["auto", "required", "off"] = Field(
        "auto", description="API keys: auto (off when the API listens on loopback only), required, off (loopback only)")
    allowed_hosts: str | None = Field(
        None, description="host names the API answers for (the Host header), comma-separated; * for any; unset: the "
                          "loopback names and the address it listens on while keys are off, any host while required")
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

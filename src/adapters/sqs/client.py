"""Building the boto3 SQS client: credentials and region from boto3's standard chain, timeouts
that turn an unreachable endpoint into an error in seconds, and long polls that fit the read timeout."""

from __future__ import annotations

from typing import Any

import boto3
from botocore.config import Config

from firmsift.adapters.sqs.errors import sqs_errors

MAX_LONG_POLL_SECONDS = 20


def make_sqs_client(*, endpoint_url: str | None = None, region: str | None = None,
                    max_pool_connections: int = 20) -> Any:
    """An SQS client; `endpoint_url` only for an emulator (ElasticMQ, LocalStack, moto) or a VPC endpoint.
    QueueUnavailable when boto3 cannot make one (no region configured, a malformed endpoint)."""
    config = Config(
        connect_timeout=5,
        read_timeout=MAX_LONG_POLL_SECONDS + 10,  # must outlast the longest long poll
        retries={"mode": "standard", "max_attempts": 3},
        max_pool_connections=max_pool_connections,
    )
    with sqs_errors("SQS: could not make a client"):
        return boto3.session.Session().client("sqs", region_name=region, endpoint_url=endpoint_url, config=config)

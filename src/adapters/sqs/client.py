"""Building the SQS client: credentials and region from the AWS SDK's standard chain, timeouts
that turn an unreachable endpoint into an error in seconds, and long polls that fit the read timeout.

The client is botocore's own (what boto3's `Session().client` returns too), made without boto3's
session: boto3 loads its resource models and S3 transfer machinery (s3transfer, multiprocessing's
managers) on every session, ~3 MiB and 60 modules the API's 100 MB budget does not need. Its endpoint
data is cut to SQS (endpoint_data.py): 7 MiB less again."""

from __future__ import annotations

from typing import Any

from botocore.config import Config

from firmsift.adapters.sqs.endpoint_data import sqs_session
from firmsift.adapters.sqs.errors import sqs_errors

MAX_LONG_POLL_SECONDS = 20


def make_sqs_client(*, endpoint_url: str | None = None, region: str | None = None,
                    max_pool_connections: int = 20) -> Any:
    """An SQS client; `endpoint_url` only for an emulator (ElasticMQ, LocalStack, moto) or a VPC endpoint.
    QueueUnavailable when botocore cannot make one (no region configured, a malformed endpoint)."""
    config = Config(
        connect_timeout=5,
        read_timeout=MAX_LONG_POLL_SECONDS + 10,  # must outlast the longest long poll
        retries={"mode": "standard", "max_attempts": 3},
        max_pool_connections=max_pool_connections,
    )
    with sqs_errors("SQS: could not make a client"):
        return sqs_session().create_client("sqs", region_name=region, endpoint_url=endpoint_url,
                                            config=config)

"""SQS's errors in port terms: a refusal, or a failure to reach or sign for SQS, becomes
QueueUnavailable naming what could not be done and why; a receipt SQS no longer honours is told apart."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    NoCredentialsError,
    NoRegionError,
    ParamValidationError,
    PartialCredentialsError,
)

from firmsift.ports.infrastructure_errors import QueueUnavailable

_CODE_PREFIX = "AWS.SimpleQueueService."  # the query-protocol spelling botocore may report
MISSING_QUEUE = frozenset({"QueueDoesNotExist", "NonExistentQueue"})
_STALE_RECEIPT = frozenset({"ReceiptHandleIsInvalid", "MessageNotInflight"})
# What SQS answers for credentials it does not accept (an unknown key, a wrong secret, an expired token).
_REFUSED_CREDENTIALS = frozenset({
    "InvalidClientTokenId", "UnrecognizedClientException", "SignatureDoesNotMatch", "InvalidSignatureException",
    "ExpiredToken", "ExpiredTokenException"})
_CREDENTIALS_HINT = ("; check the AWS credentials (boto3's standard chain: AWS_ACCESS_KEY_ID and "
                     "AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or the instance's role)")
_REGION_HINT = "; set FIRMSIFT_AWS_REGION (or AWS_DEFAULT_REGION)"


def sqs_error_codes(exc: ClientError) -> frozenset[str]:
    """The error's code in both spellings botocore reports (JSON and query protocol), unprefixed."""
    error = exc.response.get("Error", {})
    codes = (str(error.get(key) or "").removeprefix(_CODE_PREFIX) for key in ("Code", "QueryErrorCode"))
    return frozenset(code for code in codes if code)


def is_stale_receipt(exc: ClientError) -> bool:
    codes = sqs_error_codes(exc)
    if codes & _STALE_RECEIPT:
        return True
    # An expired receipt on a FIFO queue: "Value ... for parameter ReceiptHandle is invalid.
    # Reason: The receipt handle has expired." (InvalidParameterValue, not ReceiptHandleIsInvalid).
    message = str(exc.response.get("Error", {}).get("Message", "")).lower()
    return "InvalidParameterValue" in codes and "receipt" in message


def describe_sqs_error(exc: Exception) -> str:
    """The error's code (or type) and message, and a hint where the fix is a setting."""
    hint = ""
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        text = f"{error.get('Code', 'error')}: {error.get('Message', '')}".strip()
        if sqs_error_codes(exc) & _REFUSED_CREDENTIALS:
            hint = _CREDENTIALS_HINT
    else:
        text = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
            hint = _CREDENTIALS_HINT
        elif isinstance(exc, NoRegionError):
            hint = _REGION_HINT
    return text.rstrip(".") + hint if hint else text


@contextlib.contextmanager
def sqs_errors(what: str) -> Iterator[None]:
    """An SQS refusal, or a failure to reach SQS or to sign for it (no endpoint, no credentials,
    no region), raised in the block leaves it as QueueUnavailable: `what` could not be done, and
    why, with a hint where the fix is a setting. The message never carries credentials; the
    botocore error is the __cause__. A malformed call (ParamValidationError) is a bug here, not
    an outage, and leaves as it is."""
    try:
        yield
    except ParamValidationError:
        raise
    except (ClientError, BotoCoreError) as exc:
        raise QueueUnavailable(f"{what}: {describe_sqs_error(exc)}") from exc

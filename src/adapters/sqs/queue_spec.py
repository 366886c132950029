"""The SQS queues declared in deploy/queues.toml: load and check the file, apply it, report drift."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from firmsift.adapters.sqs.errors import MISSING_QUEUE, sqs_error_codes
from firmsift.adapters.sqs.errors import sqs_errors

# The attributes a declaration may set, as SQS spells them: whole-number ranges are SQS's limits.
_FLAGS = ("FifoQueue", "ContentBasedDeduplication")
_RANGES = {
    "VisibilityTimeout": (0, 43_200),
    "MessageRetentionPeriod": (60, 1_209_600),
    "ReceiveMessageWaitTimeSeconds": (0, 20),
    "DelaySeconds": (0, 900),
    "MaximumMessageSize": (1_024, 1_048_576),
}
_IMMUTABLE = ("FifoQueue",)  # SQS fixes these at creation; a change means a new queue
_ABSENT_MEANS = {"FifoQueue": "false", "ContentBasedDeduplication": "false"}  # SQS omits them on standard queues
_QUEUE_NAME = re.compile(r"[A-Za-z0-9_-]+(\.fifo)?")


class QueueSpecError(ValueError):
    """The queue file is invalid, or the live queues differ from it in a way SQS cannot change."""


@dataclass(frozen=True)
class QueueDeclaration:
    name: str
    attributes: Mapping[str, bool | int]

    def wire_attributes(self) -> dict[str, str]:
        """The attributes as SQS's CreateQueue and SetQueueAttributes take them: strings."""
        return {
            key: str(value).lower() if isinstance(value, bool) else str(value)
            for key, value in self.attributes.items()
        }


@dataclass(frozen=True)
class QueueSpec:
    """The work queue, its dead-letter queue, and the receives after which SQS moves a message there."""

    work_queue: QueueDeclaration
    dead_letter_queue: QueueDeclaration
    max_receive_count: int


def load_queue_spec(path: Path | str) -> QueueSpec:
    """Read and check a queue file; QueueSpecError names the file and the offending key."""
    source = str(path)
    try:
        document = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise QueueSpecError(f"{source}: cannot be read as TOML: {exc}") from exc
    _only_keys(document, {"work_queue", "dead_letter_queue"}, source, "")
    work = _declaration(document, "work_queue", source, extra=frozenset({"max_receive_count"}))
    dead = _declaration(document, "dead_letter_queue", source)
    max_receives = document["work_queue"].get("max_receive_count")
    if not _whole(max_receives) or not 1 <= max_receives <= 1000:
        raise QueueSpecError(f"{source}: work_queue.max_receive_count must be a whole number from 1 to 1000")
    if work.attributes.get("FifoQueue", False) != dead.attributes.get("FifoQueue", False):
        raise QueueSpecError(f"{source}: dead_letter_queue.attributes.FifoQueue must equal the work queue's")
    return QueueSpec(work, dead, max_receives)


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # TOML's true is not a number


def _only_keys(table: object, allowed: set[str], source: str, where: str) -> None:
    if not isinstance(table, dict):
        raise QueueSpecError(f"{source}: {where.rstrip('.') or 'the file'} must be a table")
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise QueueSpecError(f"{source}: unknown key {where}{unknown[0]} (allowed: {', '.join(sorted(allowed))})")


def _declaration(
    document: dict[str, Any], key: str, source: str, extra: frozenset[str] = frozenset()
) -> QueueDeclaration:
    if key not in document:
        raise QueueSpecError(f"{source}: missing table [{key}]")
    table = document[key]
    _only_keys(table, {"name", "attributes", *extra}, source, f"{key}.")
    name = table.get("name")
    if not isinstance(name, str) or not _QUEUE_NAME.fullmatch(name) or len(name) > 80:
        raise QueueSpecError(
            f"{source}: {key}.name must be a queue name: letters, digits, - and _, optional .fifo, at most 80"
        )
    attributes = table.get("attributes", {})
    _only_keys(attributes, {*_FLAGS, *_RANGES}, source, f"{key}.attributes.")
    for attribute, value in attributes.items():
        where = f"{source}: {key}.attributes.{attribute}"
        if attribute in _FLAGS and not isinstance(value, bool):
            raise QueueSpecError(f"{where} must be true or false, not {value!r}")
        if attribute in _RANGES:
            low, high = _RANGES[attribute]
            if not _whole(value) or not low <= value <= high:
                raise QueueSpecError(f"{where} must be a whole number from {low} to {high}, not {value!r}")
    fifo = attributes.get("FifoQueue", False)
    if fifo != name.endswith(".fifo"):
        raise QueueSpecError(f"{source}: {key}.name must end in .fifo exactly when attributes.FifoQueue is true")
    if attributes.get("ContentBasedDeduplication") and not fifo:
        raise QueueSpecError(f"{source}: {key}.attributes.ContentBasedDeduplication needs a FIFO queue")
    return QueueDeclaration(name, dict(attributes))


@dataclass(frozen=True)
class _Live:
    url: str
    attributes: dict[str, str]


def _live(client: Any, name: str) -> _Live | None:
    with sqs_errors(f"SQS queue {name!r}: could not read it"):
        try:
            url = client.get_queue_url(QueueName=name)["QueueUrl"]
        except ClientError as exc:
            if sqs_error_codes(exc) & MISSING_QUEUE:
                return None
            raise
        return _Live(url, client.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"])


def _redrive_policy(spec: QueueSpec, dead_letter_arn: str) -> str:
    return json.dumps({"deadLetterTargetArn": dead_letter_arn, "maxReceiveCount": spec.max_receive_count})


def _same(key: str, live: str | None, declared: str) -> bool:
    live = _ABSENT_MEANS.get(key) if live is None else live
    if live is None:
        return False
    if key == "RedrivePolicy":
        try:
            policy = json.loads(live)
            wanted = json.loads(declared)
            return (policy["deadLetterTargetArn"], int(policy["maxReceiveCount"])) == (
                wanted["deadLetterTargetArn"], int(wanted["maxReceiveCount"]),
            )
        except (ValueError, KeyError, TypeError):
            return False
    return live.strip().lower() == declared.lower()


def _drift(live: _Live, declared: dict[str, str]) -> dict[str, tuple[str | None, str]]:
    """Declared attributes whose live value differs: {name: (live, declared)}. Others are not managed."""
    return {
        key: (live.attributes.get(key), value)
        for key, value in declared.items() if not _same(key, live.attributes.get(key), value)
    }


def _plan(client: Any, spec: QueueSpec) -> list[tuple[QueueDeclaration, _Live | None, dict[str, str]]]:
    """Each queue, dead-letter queue first, with its live state and its declared wire attributes."""
    dead = _live(client, spec.dead_letter_queue.name)
    work = _live(client, spec.work_queue.name)
    # Until the dead-letter queue exists its ARN is unknown; the live one (if any) is what counts.
    dead_arn = dead.attributes.get("QueueArn", "") if dead else f"(queue {spec.dead_letter_queue.name} to be created)"
    work_wanted = spec.work_queue.wire_attributes() | {"RedrivePolicy": _redrive_policy(spec, dead_arn)}
    return [
        (spec.dead_letter_queue, dead, spec.dead_letter_queue.wire_attributes()),
        (spec.work_queue, work, work_wanted),
    ]


def queue_drift(client: Any, spec: QueueSpec) -> list[str]:
    """How the live queues differ from the spec, one line per finding; changes nothing.
    QueueUnavailable when SQS cannot be reached or refuses (credentials, permissions)."""
    report = []
    for declaration, live, wanted in _plan(client, spec):
        if live is None:
            report.append(f"{declaration.name}: missing")
            continue
        drift = _drift(live, wanted)
        for key, (found, declared) in drift.items():
            note = " (cannot be changed: delete and recreate the queue)" if key in _IMMUTABLE else ""
            report.append(f"{declaration.name}: {key} is {found}, declared {declared}{note}")
        if not drift:
            report.append(f"{declaration.name}: in sync")
    return report


def ensure_queues(client: Any, spec: QueueSpec) -> list[str]:
    """Make the live queues match the spec: create what is missing (the dead-letter queue first,
    so the work queue's redrive policy can name its ARN), set drifted attributes, and report what
    was created, updated or already in sync. Running it again changes nothing. A drift SQS cannot
    change (FifoQueue) raises QueueSpecError before anything is touched; QueueUnavailable when SQS
    cannot be reached or refuses a call (what was done before it stays done: run it again)."""
    plan = _plan(client, spec)
    for declaration, live, wanted in plan:
        frozen = [key for key in _drift(live, wanted) if key in _IMMUTABLE] if live else []
        if frozen:
            raise QueueSpecError(
                f"queue {declaration.name}: {', '.join(frozen)} differs from the spec and SQS cannot change it;"
                " delete and recreate the queue (its messages are lost) or fix the spec"
            )
    report = []
    dead_declaration, dead_live, dead_wanted = plan[0]
    dead_url = _apply(client, dead_declaration, dead_live, dead_wanted, report)
    with sqs_errors(f"SQS queue {dead_declaration.name!r}: could not read its ARN"):
        dead_arn = client.get_queue_attributes(QueueUrl=dead_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    work_declaration, work_live, work_wanted = plan[1]
    work_wanted = work_wanted | {"RedrivePolicy": _redrive_policy(spec, dead_arn)}
    _apply(client, work_declaration, work_live, work_wanted, report)
    return report


def _apply(
    client: Any, declaration: QueueDeclaration, live: _Live | None, wanted: dict[str, str], report: list[str]
) -> str:
    if live is None:
        with sqs_errors(f"SQS queue {declaration.name!r}: could not create it"):
            url = client.create_queue(QueueName=declaration.name, Attributes=wanted)["QueueUrl"]
        report.append(f"{declaration.name}: created")
        return str(url)
    drift = _drift(live, wanted)
    if drift:
        with sqs_errors(f"SQS queue {declaration.name!r}: could not update its attributes"):
            client.set_queue_attributes(QueueUrl=live.url, Attributes={key: wanted[key] for key in drift})
        changes = ", ".join(f"{key} {found} -> {declared}" for key, (found, declared) in drift.items())
        report.append(f"{declaration.name}: updated {changes}")
    else:
        report.append(f"{declaration.name}: in sync")
    return live.url

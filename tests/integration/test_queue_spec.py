"""The declared queues: deploy/queues.toml is valid, the CloudFormation template says the same,
ensure_queues applies it idempotently on the SQS emulator, and an SQS that cannot be reached or
refuses the credentials is a QueueUnavailable naming the queue and the fix, not botocore's error."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError, NoRegionError
from botocore.stub import Stubber
from cfnlint.decode import decode

from firmsift.adapters.sqs.queue_spec import QueueSpec, QueueSpecError, ensure_queues, load_queue_spec, queue_drift
from tests.support.processes import REPO
from firmsift.adapters.sqs.client import make_sqs_client
from firmsift.ports.infrastructure_errors import QueueUnavailable
from tests.support.processes import refusing_port
from tests.support.sqs_emulator import sqs_client, sqs_emulator

SPEC_FILE = REPO / "deploy" / "queues.toml"
TEMPLATE = REPO / "deploy" / "cloudformation" / "queues.yaml"


@pytest.fixture
def spec() -> QueueSpec:
    return load_queue_spec(SPEC_FILE)


@pytest.fixture
def client() -> Iterator[Any]:
    # One emulator per test: the spec's queue names are fixed, so tests must not share queues.
    with sqs_emulator() as endpoint:
        sqs = sqs_client(endpoint)
        yield sqs
        sqs.close()


def test_the_declared_queues_are_the_documented_ones(spec: QueueSpec) -> None:
    assert spec.work_queue.name == "firmsift-jobs.fifo"
    assert spec.dead_letter_queue.name == "firmsift-jobs-dlq.fifo"
    assert spec.max_receive_count == 5
    assert spec.work_queue.attributes == {
        "FifoQueue": True, "ContentBasedDeduplication": False, "VisibilityTimeout": 120,
        "MessageRetentionPeriod": 345600, "ReceiveMessageWaitTimeSeconds": 5,
    }
    assert spec.dead_letter_queue.attributes["MessageRetentionPeriod"] == 14 * 24 * 3600


def test_the_template_passes_cfn_lint() -> None:
    cfn_lint = Path(sys.executable).with_name("cfn-lint")
    result = subprocess.run([str(cfn_lint), str(TEMPLATE)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def _plain(value: Any) -> Any:
    """cfn-lint's decoded nodes as plain dicts, lists and scalars."""
    return json.loads(json.dumps(value))


def test_the_template_declares_what_the_spec_declares(spec: QueueSpec) -> None:
    template, problems = decode(str(TEMPLATE))
    assert not problems and template is not None
    template = _plain(template)
    resources = template["Resources"]
    queues = {name: body for name, body in resources.items() if body["Type"] == "AWS::SQS::Queue"}
    assert set(queues) == {"WorkQueue", "DeadLetterQueue"}

    def declared(resource: str, parameter: str) -> tuple[str, dict[str, Any]]:
        properties = dict(queues[resource]["Properties"])
        assert properties.pop("QueueName") == {"Ref": parameter}
        return template["Parameters"][parameter]["Default"], properties

    dead_name, dead_properties = declared("DeadLetterQueue", "DeadLetterQueueName")
    assert (dead_name, dead_properties) == (spec.dead_letter_queue.name, dict(spec.dead_letter_queue.attributes))
    work_name, work_properties = declared("WorkQueue", "WorkQueueName")
    redrive = work_properties.pop("RedrivePolicy")
    assert (work_name, work_properties) == (spec.work_queue.name, dict(spec.work_queue.attributes))
    assert redrive == {
        "deadLetterTargetArn": {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]},
        "maxReceiveCount": spec.max_receive_count,
    }


def test_ensure_queues_creates_then_finds_everything_in_sync(client: Any, spec: QueueSpec) -> None:
    assert queue_drift(client, spec) == ["firmsift-jobs-dlq.fifo: missing", "firmsift-jobs.fifo: missing"]
    assert ensure_queues(client, spec) == ["firmsift-jobs-dlq.fifo: created", "firmsift-jobs.fifo: created"]
    assert ensure_queues(client, spec) == ["firmsift-jobs-dlq.fifo: in sync", "firmsift-jobs.fifo: in sync"]
    assert queue_drift(client, spec) == ["firmsift-jobs-dlq.fifo: in sync", "firmsift-jobs.fifo: in sync"]

    url = client.get_queue_url(QueueName="firmsift-jobs.fifo")["QueueUrl"]
    attributes = client.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    dead_url = client.get_queue_url(QueueName="firmsift-jobs-dlq.fifo")["QueueUrl"]
    dead_arn = client.get_queue_attributes(QueueUrl=dead_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    assert (attributes["FifoQueue"], attributes["VisibilityTimeout"], attributes["ReceiveMessageWaitTimeSeconds"]) == (
        "true", "120", "5",
    )
    assert json.loads(attributes["RedrivePolicy"]) == {"deadLetterTargetArn": dead_arn, "maxReceiveCount": 5}


def test_a_drifted_attribute_is_reported_then_fixed(client: Any, spec: QueueSpec) -> None:
    ensure_queues(client, spec)
    url = client.get_queue_url(QueueName="firmsift-jobs.fifo")["QueueUrl"]
    client.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": "30"})  # changed by hand

    assert queue_drift(client, spec) == [
        "firmsift-jobs-dlq.fifo: in sync", "firmsift-jobs.fifo: VisibilityTimeout is 30, declared 120",
    ]
    assert ensure_queues(client, spec) == [
        "firmsift-jobs-dlq.fifo: in sync", "firmsift-jobs.fifo: updated VisibilityTimeout 30 -> 120",
    ]
    assert queue_drift(client, spec)[1] == "firmsift-jobs.fifo: in sync"


def test_a_queue_of_the_wrong_kind_is_an_error_not_a_change(spec: QueueSpec) -> None:
    # SQS ties FIFO to the .fifo name, so this drift needs a queue changed behind SQS's back: a
    # stubbed endpoint answering that the dead-letter queue is a standard one.
    client = boto3.session.Session().client(
        "sqs", region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
    )
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/firmsift-jobs-dlq.fifo"
    with Stubber(client) as stub:
        stub.add_response("get_queue_url", {"QueueUrl": url}, {"QueueName": "firmsift-jobs-dlq.fifo"})
        stub.add_response("get_queue_attributes", {"Attributes": {"VisibilityTimeout": "120"}})
        stub.add_client_error("get_queue_url", "AWS.SimpleQueueService.NonExistentQueue")
        with pytest.raises(QueueSpecError, match="FifoQueue differs from the spec and SQS cannot change it"):
            ensure_queues(client, spec)
        stub.assert_no_pending_responses()  # nothing was created or changed


@pytest.fixture
def no_aws_configuration(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No credentials and no region anywhere boto3's standard chain looks (the instance's
    metadata service included)."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_REGION",
                 "AWS_REGION", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                 "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_an_unreachable_endpoint_is_queue_unavailable_naming_the_queue(spec: QueueSpec) -> None:
    with refusing_port() as port:
        client = sqs_client(f"http://127.0.0.1:{port}")
        for declared in (queue_drift, ensure_queues):
            with pytest.raises(QueueUnavailable) as raised:
                declared(client, spec)
            assert str(raised.value).startswith(
                f"SQS queue 'firmsift-jobs-dlq.fifo': could not read it: EndpointConnectionError: Could not connect "
                f'to the endpoint URL: "http://127.0.0.1:{port}/"')
            assert isinstance(raised.value.__cause__, EndpointConnectionError)
        client.close()


def test_missing_credentials_are_queue_unavailable_saying_where_boto3_looks(
    spec: QueueSpec, no_aws_configuration: None
) -> None:
    with refusing_port() as port:  # refused if anything were sent: the request is not even signed
        client = make_sqs_client(endpoint_url=f"http://127.0.0.1:{port}", region="us-east-1")
        with pytest.raises(QueueUnavailable) as raised:
            queue_drift(client, spec)
        client.close()
    assert str(raised.value) == (
        "SQS queue 'firmsift-jobs-dlq.fifo': could not read it: NoCredentialsError: Unable to locate credentials; "
        "check the AWS credentials (boto3's standard chain: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
        "AWS_PROFILE, or the instance's role)")
    assert isinstance(raised.value.__cause__, NoCredentialsError)


@pytest.mark.parametrize("code", ["InvalidClientTokenId", "SignatureDoesNotMatch", "UnrecognizedClientException"])
def test_credentials_sqs_refuses_are_queue_unavailable_saying_so(spec: QueueSpec, code: str) -> None:
    # What AWS answers for an unknown key or a wrong secret; the emulator accepts any credentials.
    client = boto3.session.Session().client(
        "sqs", region_name="us-east-1", aws_access_key_id="wrong", aws_secret_access_key="wrong"
    )
    with Stubber(client) as stub:
        stub.add_client_error("get_queue_url", code, "The security token included in the request is invalid.", 403)
        with pytest.raises(QueueUnavailable) as raised:
            ensure_queues(client, spec)
        stub.assert_no_pending_responses()
    assert str(raised.value) == (
        f"SQS queue 'firmsift-jobs-dlq.fifo': could not read it: {code}: The security token included in the "
        "request is invalid; check the AWS credentials (boto3's standard chain: AWS_ACCESS_KEY_ID and "
        "AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or the instance's role)")
    assert isinstance(raised.value.__cause__, ClientError)
    assert "wrong" not in str(raised.value)


def test_a_queue_sqs_refuses_to_create_is_queue_unavailable_naming_it(spec: QueueSpec) -> None:
    client = boto3.session.Session().client(
        "sqs", region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
    )
    with Stubber(client) as stub:
        stub.add_client_error("get_queue_url", "AWS.SimpleQueueService.NonExistentQueue")
        stub.add_client_error("get_queue_url", "AWS.SimpleQueueService.NonExistentQueue")
        stub.add_client_error("create_queue", "AccessDenied", "not authorized to perform sqs:createqueue", 403)
        with pytest.raises(QueueUnavailable, match=r"^SQS queue 'firmsift-jobs-dlq.fifo': could not create it: "
                                                   r"AccessDenied: not authorized to perform sqs:createqueue$"):
            ensure_queues(client, spec)


def test_no_region_is_queue_unavailable_naming_the_setting(no_aws_configuration: None) -> None:
    with pytest.raises(QueueUnavailable) as raised:
        make_sqs_client()
    assert str(raised.value) == ("SQS: could not make a client: NoRegionError: You must specify a region; "
                                 "set FIRMSIFT_AWS_REGION (or AWS_DEFAULT_REGION)")
    assert isinstance(raised.value.__cause__, NoRegionError)


@pytest.mark.parametrize(
    ("declared", "broken", "message"),
    [
        ("VisibilityTimeout = 120", 'VisibilityTimeout = "120s"',
         "work_queue.attributes.VisibilityTimeout must be a whole number"),
        ("max_receive_count = 5", "max_receive_count = 0", "work_queue.max_receive_count must be a whole number"),
        ("ReceiveMessageWaitTimeSeconds = 5", "ReceiveMessageWaitTimeSeconds = 5\nColour = 1",
         "unknown key work_queue.attributes.Colour"),
        ('name = "firmsift-jobs-dlq.fifo"', 'name = "firmsift-jobs-dlq"', "dead_letter_queue.name must end in .fifo"),
    ],
)
def test_an_invalid_spec_names_the_offending_key(tmp_path: Path, declared: str, broken: str, message: str) -> None:
    text = SPEC_FILE.read_text(encoding="utf-8")
    assert declared in text
    spec_file = tmp_path / "queues.toml"
    spec_file.write_text(text.replace(declared, broken, 1), encoding="utf-8")
    with pytest.raises(QueueSpecError, match=message) as raised:
        load_queue_spec(spec_file)
    assert str(spec_file) in str(raised.value)

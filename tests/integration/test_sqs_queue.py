"""The SQS queue and reply publisher beyond the shared suite, on the emulator: what goes over the
wire, how SQS failures map to domain errors, reply queues by name and URL."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.stub import Stubber

from firmsift.adapters.sqs.queue import SqsQueue, SqsReplyPublisher
from firmsift.domain.errors import StaleReceipt
from firmsift.domain.work_messages import OutgoingMessage
from firmsift.ports.infrastructure_errors import QueuePartlySent, QueueUnavailable
from tests.support.processes import refusing_port
from tests.support.sqs_emulator import (
    emulator_queue_url,
    fresh_queue,
    offline_sqs_client,
    sqs_client,
    sqs_emulator,
)

pytestmark = pytest.mark.anyio


@dataclass
class Calls:
    """The SQS operations a client made, with their parameters (botocore's provide-client-params hook)."""

    made: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def __call__(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.made.append((model.name, dict(params)))

    def of(self, operation: str) -> list[dict[str, Any]]:
        return [params for name, params in self.made if name == operation]


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with sqs_emulator() as url:
        yield url


@pytest.fixture
def calls() -> Calls:
    return Calls()


@pytest.fixture
def client(endpoint: str, calls: Calls) -> Iterator[Any]:
    sqs = sqs_client(endpoint)
    sqs.meta.events.register("provide-client-params.sqs", calls)
    yield sqs
    sqs.close()


async def test_send_passes_group_and_dedup_ids_and_receive_asks_for_what_it_reads(
    client: Any, calls: Calls
) -> None:
    _, url = fresh_queue(client, "work.fifo")
    queue = SqsQueue(client, url, visibility_timeout=7.2)
    message_id = await queue.send("body", group_id="job-1", dedup_id="dedup-1")
    [message] = await queue.receive(max_messages=3, wait_seconds=0.2)
    assert (message.message_id, message.group_id, message.receive_count) == (message_id, "job-1", 1)
    [sent] = calls.of("SendMessage")
    assert (sent["MessageGroupId"], sent["MessageDeduplicationId"]) == ("job-1", "dedup-1")
    [asked] = calls.of("ReceiveMessage")
    # Whole seconds, rounded up: a lease never shorter, a wait never cut short.
    assert (asked["VisibilityTimeout"], asked["WaitTimeSeconds"], asked["MaxNumberOfMessages"]) == (8, 1, 3)
    assert {"ApproximateReceiveCount", "MessageGroupId"} <= set(asked["MessageSystemAttributeNames"])
    await queue.change_visibility(message.receipt, 0)
    raw = client.receive_message(QueueUrl=url, MessageSystemAttributeNames=["All"])["Messages"][0]
    assert raw["Attributes"]["MessageDeduplicationId"] == "dedup-1"


async def test_receive_count_is_sqs_approximate_receive_count(client: Any) -> None:
    _, url = fresh_queue(client, "work.fifo")
    queue = SqsQueue(client, url, visibility_timeout=30)
    await queue.send("body", group_id="g", dedup_id="d")
    for expected in (1, 2, 3):
        [message] = await queue.receive()
        assert message.receive_count == expected
        await queue.change_visibility(message.receipt, 0)


async def test_a_queue_given_by_name_is_looked_up_once(client: Any, calls: Calls) -> None:
    name, _ = fresh_queue(client, "work.fifo")
    queue = SqsQueue(client, name, visibility_timeout=30)
    await queue.send("one", group_id="a", dedup_id="1")
    await queue.send("two", group_id="b", dedup_id="2")
    assert len(await queue.receive(max_messages=10)) == 2
    assert await queue.approximate_counts() == {"visible": 0, "in_flight": 2}
    assert calls.of("GetQueueUrl") == [{"QueueName": name}]


async def test_a_malformed_receipt_is_a_stale_receipt(client: Any) -> None:
    _, url = fresh_queue(client, "work.fifo")
    with pytest.raises(StaleReceipt, match="not current"):
        await SqsQueue(client, url, visibility_timeout=30).change_visibility("not-a-receipt", 10)


@pytest.mark.parametrize(
    ("code", "message", "expected"),
    [
        ("ReceiptHandleIsInvalid", "The input receipt handle 'x' is not a valid receipt handle.", StaleReceipt),
        ("InvalidParameterValue", "Value x for parameter ReceiptHandle is invalid. Reason: The receipt handle"
                                  " has expired.", StaleReceipt),
        ("AWS.SimpleQueueService.NonExistentQueue", "The specified queue does not exist.", QueueUnavailable),
        ("InvalidParameterValue", "Value 0 for parameter QueueUrl is invalid.", QueueUnavailable),
    ],
)
async def test_delete_maps_what_aws_answers(code: str, message: str, expected: type[Exception]) -> None:
    # The emulator answers success to any DeleteMessage, so AWS's documented refusals are replayed.
    client = offline_sqs_client()
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/work.fifo"
    with Stubber(client) as stub:
        stub.add_client_error("delete_message", code, message, expected_params={"QueueUrl": url, "ReceiptHandle": "x"})
        with pytest.raises(expected):
            await SqsQueue(client, url, visibility_timeout=30).delete("x")


async def test_send_many_is_one_send_message_batch_call_per_ten_messages(client: Any, calls: Calls) -> None:
    _, url = fresh_queue(client, "work.fifo")
    messages = [OutgoingMessage(f'{{"job_id": "j{i}"}}', group_id=f"j{i}", dedup_id=f"j{i}") for i in range(23)]
    await SqsQueue(client, url, visibility_timeout=30).send_many(messages)
    batches = calls.of("SendMessageBatch")
    assert [len(call["Entries"]) for call in batches] == [10, 10, 3] and calls.of("SendMessage") == []
    sent = [entry for call in batches for entry in call["Entries"]]
    assert [(e["MessageBody"], e["MessageGroupId"], e["MessageDeduplicationId"]) for e in sent] == [
        (m.body, m.group_id, m.dedup_id) for m in messages]
    assert client.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])[
        "Attributes"]["ApproximateNumberOfMessages"] == "23"


def stubbed_batches(stub: Stubber, url: str, messages: list[OutgoingMessage]) -> None:
    """SQS accepts the first call's ten entries, and refuses entries 3 and 5 of the second."""
    def entries(chunk: list[OutgoingMessage]) -> list[dict[str, str]]:
        return [{"Id": str(i), "MessageBody": m.body, "MessageGroupId": m.group_id,
                 "MessageDeduplicationId": m.dedup_id} for i, m in enumerate(chunk)]

    def ok(ids: list[int]) -> list[dict[str, str]]:
        return [{"Id": str(i), "MessageId": f"m{i}", "MD5OfMessageBody": "0" * 32} for i in ids]

    stub.add_response("send_message_batch", {"Successful": ok(list(range(10))), "Failed": []},
                      {"QueueUrl": url, "Entries": entries(messages[:10])})
    failed = [{"Id": str(i), "SenderFault": False, "Code": "InternalError", "Message": "try again"} for i in (5, 3)]
    stub.add_response("send_message_batch", {"Successful": ok([0, 1, 2, 4, 6, 7]), "Failed": failed},
                      {"QueueUrl": url, "Entries": entries(messages[10:18])})


async def test_send_many_says_how_many_messages_are_sent_for_sure() -> None:
    client = offline_sqs_client()
    url = "https://sqs.us-east-1.amazonaws.com/123456789012/work.fifo"
    messages = [OutgoingMessage(f"m{i}", group_id=f"g{i}", dedup_id=f"d{i}") for i in range(18)]
    with Stubber(client) as stub:
        stubbed_batches(stub, url, messages)
        with pytest.raises(QueuePartlySent, match="2 of 8 refused, the first with InternalError") as raised:
            await SqsQueue(client, url, visibility_timeout=30).send_many(messages)
    assert raised.value.sent == 13 and "13 of 18 messages sent" in str(raised.value)
    with Stubber(client) as stub:  # a call that fails outright: nothing of it counts as sent
        stub.add_response("send_message_batch", {"Successful": [], "Failed": []})
        stub.add_client_error("send_message_batch", "ServiceUnavailable", "down", http_status_code=503)
        with pytest.raises(QueuePartlySent, match="could not send messages") as raised:
            await SqsQueue(client, url, visibility_timeout=30).send_many(messages)
    assert raised.value.sent == 10 and isinstance(raised.value, QueueUnavailable)


async def test_sending_to_a_missing_queue_is_queue_unavailable(client: Any, endpoint: str) -> None:
    url = emulator_queue_url(endpoint, "nowhere.fifo")
    for queue in ("nowhere.fifo", url):
        with pytest.raises(QueueUnavailable, match="nowhere.fifo.*could not send a message"):
            await SqsQueue(client, queue, visibility_timeout=30).send("body", group_id="g", dedup_id="d")


async def test_an_unreachable_endpoint_is_queue_unavailable_at_the_first_refusal(calls: Calls) -> None:
    secret = f"secret-{uuid.uuid4().hex}"
    with refusing_port() as port:
        client = boto3.session.Session().client(
            "sqs", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
            aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key=secret,
            config=Config(connect_timeout=1, retries={"mode": "standard", "max_attempts": 1}),
        )
        client.meta.events.register("provide-client-params.sqs", calls)
        queue = SqsQueue(client, "work.fifo", visibility_timeout=30)
        with pytest.raises(QueueUnavailable, match="could not send a message") as raised:
            await queue.send("body", group_id="g", dedup_id="d")
        assert secret not in str(raised.value) and "AKIDEXAMPLE" not in str(raised.value)
        with pytest.raises(QueueUnavailable):
            await queue.receive(wait_seconds=1)
    # The adapter tries each call once and says so; retrying is the client's configured business.
    # The queue named by name is looked up first: that lookup is what the refusal ended.
    assert [name for name, _ in calls.made] == ["GetQueueUrl", "GetQueueUrl"]


async def test_replies_by_name_look_the_queue_up_once(client: Any, calls: Calls) -> None:
    name, url = fresh_queue(client, "replies.fifo")
    publisher = SqsReplyPublisher(client)
    await publisher.publish(name, '{"job_id": "j1"}', group_id="j1", dedup_id="j1")
    await publisher.publish(name, '{"job_id": "j2"}', group_id="j2", dedup_id="j2")
    assert len(calls.of("GetQueueUrl")) == 1
    received = client.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"])
    assert [(m["Body"], m["Attributes"]["MessageGroupId"], m["Attributes"]["MessageDeduplicationId"])
            for m in received["Messages"]] == [('{"job_id": "j1"}', "j1", "j1"), ('{"job_id": "j2"}', "j2", "j2")]


async def test_replies_by_url_need_no_lookup(client: Any, calls: Calls) -> None:
    _, url = fresh_queue(client, "replies.fifo")
    await SqsReplyPublisher(client).publish(url, "done", group_id="j1", dedup_id="j1")
    assert calls.of("GetQueueUrl") == []
    assert client.receive_message(QueueUrl=url)["Messages"][0]["Body"] == "done"


async def test_a_standard_reply_queue_gets_no_fifo_ids(client: Any, calls: Calls) -> None:
    name, url = fresh_queue(client, "replies")
    await SqsReplyPublisher(client).publish(name, "done", group_id="j1", dedup_id="j1")
    [sent] = calls.of("SendMessage")
    assert "MessageGroupId" not in sent and "MessageDeduplicationId" not in sent
    assert client.receive_message(QueueUrl=url)["Messages"][0]["Body"] == "done"


async def test_a_missing_reply_queue_is_queue_unavailable_naming_it(client: Any, endpoint: str) -> None:
    url = emulator_queue_url(endpoint, "gone")
    for queue in ("gone-replies.fifo", url):
        with pytest.raises(QueueUnavailable, match=f"{re.escape(queue)}.*could not publish the reply"):
            await SqsReplyPublisher(client).publish(queue, "done", group_id="j1", dedup_id="j1")

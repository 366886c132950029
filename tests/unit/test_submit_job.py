"""submit_job on in-memory fakes: validation, row before message, and the publish gap."""

import json

import pytest

from firmsift.adapters.classifier_files import load_catalog
from firmsift.adapters.memory_queue import InMemoryQueue
from firmsift.adapters.memory_store import InMemoryStore
from firmsift.domain.errors import (
    InvalidDomains,
    InvalidRequest,
    QueueUnavailable,
    TooManyDomains,
    UnknownClassifier,
)
from firmsift.domain.model import JobStatus
from firmsift.domain.submit import RecordThenPublish, SubmitJob, parse_job_id, submit_job

pytestmark = pytest.mark.anyio



async def submit(command: SubmitJob, store=None, queue=None, max_domains: int = 10):
    intake = RecordThenPublish(store or InMemoryStore(),
                               queue or InMemoryQueue("jobs", visibility_timeout=30, max_receives=5))
    return await submit_job(command, catalog=load_catalog(), intake=intake, max_domains=max_domains)


async def test_row_is_written_before_the_message_which_carries_only_the_id() -> None:
    store = InMemoryStore()
    queue = InMemoryQueue("jobs", visibility_timeout=30, max_receives=5)
    seen_rows_at_send: list[bool] = []
    original_send = queue.send

    async def send(body: str, *, group_id: str, dedup_id: str) -> str:
        seen_rows_at_send.append(json.loads(body)["job_id"] in store.jobs)
        return await original_send(body, group_id=group_id, dedup_id=dedup_id)

    queue.send = send  # type: ignore[method-assign]
    job = await submit(SubmitJob("cpg", ["b.com", "A.com", "b.com"], "replies"), store, queue)
    assert seen_rows_at_send == [True]
    assert job.domains == ("b.com", "a.com") and job.reply_queue == "replies"
    [message] = await queue.receive(max_messages=10)
    assert json.loads(message.body) == {"job_id": job.id} and message.group_id == job.id
    assert store.jobs[job.id].status is JobStatus.PENDING


async def test_publish_failure_marks_the_job_failed_and_raises() -> None:
    store = InMemoryStore()
    queue = InMemoryQueue("jobs", visibility_timeout=30, max_receives=5)
    queue.fail_next_send(QueueUnavailable("down"))
    with pytest.raises(QueueUnavailable):
        await submit(SubmitJob("cpg", ["a.com"]), store, queue)
    [job] = store.jobs.values()
    assert job.status is JobStatus.FAILED and "could not be queued" in (job.error or "")


@pytest.mark.parametrize(
    ("command", "error"),
    [
        (SubmitJob("nope", ["a.com"]), UnknownClassifier),
        (SubmitJob(None, ["a.com"]), UnknownClassifier),
        (SubmitJob("cpg", []), InvalidRequest),
        (SubmitJob("cpg", "a.com"), InvalidRequest),
        (SubmitJob("cpg", ["a.com", "localhost"]), InvalidDomains),
        (SubmitJob("cpg", [f"d{i}.com" for i in range(11)]), TooManyDomains),
        (SubmitJob("cpg", ["a.com"], "no spaces allowed"), InvalidRequest),
    ],
)
async def test_bad_requests_write_nothing(command: SubmitJob, error: type) -> None:
    store = InMemoryStore()
    with pytest.raises(error):
        await submit(command, store)
    assert store.jobs == {}


async def test_reply_queue_may_be_a_fifo_name_or_an_sqs_url() -> None:
    for reply in ("replies.fifo", "https://sqs.eu-west-1.amazonaws.com/123456789012/replies.fifo"):
        job = await submit(SubmitJob("cpg", ["a.com"], reply))
        assert job.reply_queue == reply


def test_job_ids_are_canonical_uuids() -> None:
    assert parse_job_id("6F9619FF-8B86-D011-B42D-00C04FC964FF") == "6f9619ff-8b86-d011-b42d-00c04fc964ff"
    from firmsift.domain.errors import JobNotFound

    for bad in ("x", "6f9619ff8b86d011b42d00c04fc964ff", "{6f9619ff-8b86-d011-b42d-00c04fc964ff}"):
        with pytest.raises(JobNotFound):
            parse_job_id(bad)

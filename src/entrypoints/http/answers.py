"""The answer routes: PUT a correction of (classifier, domain), DELETE to undo the latest one, GET
/answers to list or export them, POST /answers/forget to forget cached answers. Answers are
shared by every key: each human answer records the id of the key that set it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from firmsift.domain.human_answer_documents import csv_header, csv_line, human_answer_document
from firmsift.domain.human_answers import HumanAnswer
from firmsift.domain.model import Classifier, Source
from firmsift.entrypoints.http.auth import Gate
from firmsift.entrypoints.http.contract.requests import ForgetRequest, HumanAnswerRequest
from firmsift.entrypoints.http.contract.validation import validated
from firmsift.entrypoints.http.errors import BodyRejected
from firmsift.entrypoints.http.json_body import read_json_body
from firmsift.entrypoints.http.query_numbers import whole_number
from firmsift.ports.batches import BatchStore
from firmsift.ports.human_answers import HumanAnswerStore
from firmsift.ports.repository import ForgetsAnswers
from firmsift.services.batches import find_batch
from firmsift.services.forget import ForgetAnswers, forget_answers
from firmsift.services.human_answers import all_human_answers, correct_answer, known_classifier, undo_correction

FORMATS = {"json": "application/json", "csv": "text/csv; charset=utf-8"}
DEFAULT_PAGE, MAX_PAGE = 100, 1000


def answer_routes(*, catalog: Mapping[str, Classifier], gate: Gate, store: HumanAnswerStore, cached: ForgetsAnswers,
                  batches: BatchStore, max_body_bytes: int,
                  deadline: Callable[[], AbstractAsyncContextManager[None]]) -> list[Route]:
    """The routes, on the app's gate (keys, rate limits) and backend deadline."""

    async def forget(request: Request) -> JSONResponse:
        caller = await gate.caller(request.headers, request.client.host if request.client else "")
        body = validated(ForgetRequest, await read_json_body(request, max_body_bytes))
        async with deadline():
            batch = await find_batch(body.batch_id, caller.owner, batches) if body.batch_id is not None else None
            forgotten = await forget_answers(
                ForgetAnswers(body.classifier, domains=tuple(body.domains) if body.domains is not None else None, batch=batch,
                              everything=body.all, only_precheck=body.only == "precheck"),
                catalog=catalog, answers=cached, batches=batches)
        return JSONResponse({"forgotten": forgotten})

    async def put_or_delete(request: Request) -> JSONResponse:
        caller = await gate.caller(request.headers, request.client.host if request.client else "")
        classifier, domain = request.path_params["classifier"], request.path_params["domain"]
        if request.method == "DELETE":
            async with deadline():
                undone = await undo_correction(domain, classifier, catalog=catalog, store=store)
            return JSONResponse({"removed": human_answer_document(undone.removed),
                                 "restored": _document_or_none(undone.restored)})
        body = validated(HumanAnswerRequest, await read_json_body(request, max_body_bytes))
        async with deadline():
            corrected = await correct_answer(domain, classifier, body.answer, body.note,
                                             corrected_by=caller.owner or None, catalog=catalog, store=store)
        return JSONResponse({**human_answer_document(corrected.answer),
                             "replaced": _document_or_none(corrected.replaced), "changed": corrected.changed})

    async def listing(request: Request) -> Response:
        await gate.caller(request.headers, request.client.host if request.client else "")
        query = request.query_params
        classifier = known_classifier(query["classifier"], catalog) if "classifier" in query else None
        source = query.get("source", Source.HUMAN.value)
        if source != Source.HUMAN.value:
            raise BodyRejected(400, "bad_source", f"source must be {Source.HUMAN.value!r} (the answers people "
                                                  f"set), not {source!r}")
        wanted = query.get("format", "json")
        if wanted not in FORMATS:
            raise BodyRejected(400, "bad_format", f"format must be one of {', '.join(FORMATS)}, not {wanted!r}")
        # Checked whatever the format.
        limit = whole_number(query, "limit", low=1, high=MAX_PAGE, default=DEFAULT_PAGE)
        after = read_cursor(query.get("after"))
        if wanted == "csv":
            return StreamingResponse(human_answer_csv_lines(store, classifier, after), media_type=FORMATS["csv"])
        async with deadline():
            page = await store.list_human_answers(classifier, after=after, limit=limit + 1)
        following = page_cursor(page[limit - 1]) if len(page) > limit else None
        return JSONResponse({"answers": [human_answer_document(h) for h in page[:limit]], "next": following})

    return [
        Route("/answers", listing, methods=["GET"]),
        Route("/answers/forget", forget, methods=["POST"]),
        Route("/answers/{classifier}/{domain}", put_or_delete, methods=["PUT", "DELETE"]),
    ]


async def human_answer_csv_lines(store: HumanAnswerStore, classifier: str | None,
                                 after: tuple[str, str] | None) -> AsyncIterator[str]:
    """The human answers as CSV with its header: what `firmsift answers list --csv` writes and `answers import` reads."""
    yield csv_header()
    async for human in all_human_answers(store, classifier, after=after):
        yield csv_line(human)


def _document_or_none(human: HumanAnswer | None) -> dict[str, Any] | None:
    return human_answer_document(human) if human is not None else None


def page_cursor(human: HumanAnswer) -> str:
    """The paging cursor after `human`: its classifier and domain (a domain holds no '/')."""
    return f"{human.classifier}/{human.domain}"


def read_cursor(cursor: str | None) -> tuple[str, str] | None:
    """The listing key a `next` cursor names (None: from the start); bad_cursor when it names none."""
    if cursor is None:
        return None
    classifier, slash, domain = cursor.rpartition("/")
    if not slash or not classifier or not domain:
        raise BodyRejected(400, "bad_cursor", f"after must be a `next` value of an earlier page, not {cursor!r}")
    return classifier, domain

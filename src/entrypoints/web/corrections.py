"""Corrections in the web app: a row's correction form, stored as a human answer through the
service PUT /answers uses, and the Human answers page: the corrections a page at a time, each
with its undo (the service DELETE /answers uses), and all of them as the CSV that
`firmsift answers list --csv` writes and `firmsift answers import` reads."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from firmsift.domain.batches import Batch
from firmsift.domain.errors import InvalidRequest, UnknownClassifier
from firmsift.domain.human_answers import HumanAnswer, HumanAnswerNotFound, parse_answer_word
from firmsift.domain.model import Classifier
from firmsift.entrypoints.http.answers import FORMATS, human_answer_csv_lines, page_cursor, read_cursor
from firmsift.entrypoints.http.errors import BodyRejected
from firmsift.entrypoints.http.query_numbers import LARGEST_ROW_INDEX, whole_number
from firmsift.entrypoints.web.rows import RowViews, answer_word
from firmsift.entrypoints.web.site import CSRF_HEADER, Site, Visitor, form_fields
from firmsift.ports.batches import BatchStore
from firmsift.ports.human_answers import HumanAnswerStore
from firmsift.services.batches import find_batch
from firmsift.services.human_answers import Undone, correct_answer, undo_correction

LISTED_ANSWERS = 100  # human answers on one page
VIEWS = ("batch", "review")  # the pages a correction form is on, and goes back to


def correction_routes(site: Site, *, catalog: Mapping[str, Classifier], batches: BatchStore, views: RowViews,
                      humans: HumanAnswerStore, page_rows: int,
                      deadline: Callable[[], AbstractAsyncContextManager[None]]) -> list[Route]:
    """The routes; `page_rows` is how many rows a batch's page holds (to go back to the row's page)."""

    async def correct(request: Request, visitor: Visitor) -> Response:
        """Our script's request (it sends the CSRF header) gets JSON: the row rendered again, or the
        problems (422); a plain form post is sent back to the row, or shown its problems with what
        was typed."""
        async with deadline():
            batch = await find_batch(request.path_params["batch_id"], visitor.caller.owner, batches)
        fields = await form_fields(request)
        view = fields.get("view") if fields.get("view") in VIEWS else "batch"
        index = _row_index(fields)
        scripted = CSRF_HEADER in request.headers
        try:
            async with deadline():
                corrected = await correct_answer(
                    fields.get("domain", ""), batch.classifier, _answer(fields.get("answer", "")), fields.get("note"),
                    corrected_by=visitor.caller.owner or None, catalog=catalog, store=humans)
        except (InvalidRequest, UnknownClassifier) as refused:
            problems = _problems(refused)
            if scripted:
                return JSONResponse({"errors": problems}, status_code=422, headers={"cache-control": "no-store"})
            return await site.render(request, visitor.session, "correction.html", status=422, title="Correction not saved",
                                     batch_id=batch.id, view=view, index=index, domain=fields.get("domain", ""),
                                     answer=fields.get("answer", ""), note=fields.get("note", ""), errors=problems,
                                     back=_back(batch.id, view, index, page_rows))
        human = corrected.answer
        message = (f"Corrected {human.domain} ({human.classifier}) to {answer_word(human.answer)}."
                   if corrected.changed else f"{human.domain} was already corrected so: nothing changed.")
        if scripted:
            return JSONResponse({"message": message, "row_html": await _row_html(batch, index, view, visitor)},
                                headers={"cache-control": "no-store"})
        await site.sessions.leave_notice(visitor.session, message)
        return RedirectResponse(_back(batch.id, view, index, page_rows), status_code=303)

    async def _row_html(batch: Batch, index: int | None, view: str, visitor: Visitor) -> str | None:
        """The row at `index` rendered again for its page; None when there is no such row."""
        if index is None:
            return None
        async with deadline():
            rows = await views.page(batch, index, 1)
        if not rows or rows[0]["index"] != index:
            return None
        return site.templates.get_template("rows.html").render(rows=rows, view=view,
                                                                csrf=visitor.session.csrf)

    async def listing(request: Request, visitor: Visitor) -> Response:
        shown_after = request.query_params.get("after")
        try:
            after = read_cursor(shown_after)
        except BodyRejected:
            after, shown_after = None, None  # a cursor of ours spoiled: start from the first page
        async with deadline():
            page = await humans.list_human_answers(None, after=after, limit=LISTED_ANSWERS + 1)
        following = page_cursor(page[LISTED_ANSWERS - 1]) if len(page) > LISTED_ANSWERS else None
        return await site.render(request, visitor.session, "human_answers.html", title="Human answers",
                                 answers=[_shown(h) for h in page[:LISTED_ANSWERS]], after=shown_after, following=following)

    async def undo(request: Request, visitor: Visitor) -> Response:
        fields = await form_fields(request)
        try:
            async with deadline():
                undone = await undo_correction(fields.get("domain", ""), fields.get("classifier", ""),
                                               catalog=catalog, store=humans)
            await site.sessions.leave_notice(visitor.session, _undone_notice(undone))
        except (HumanAnswerNotFound, InvalidRequest, UnknownClassifier) as refused:
            await site.sessions.leave_notice(visitor.session, f"Nothing undone: {'; '.join(_problems(refused))}.")
        after = fields.get("after")
        return RedirectResponse("/human-answers" + (f"?after={quote(after)}" if after else ""), status_code=303)

    async def export(request: Request, visitor: Visitor) -> Response:
        return StreamingResponse(human_answer_csv_lines(humans, None, None), media_type=FORMATS["csv"],
                                 headers={"content-disposition": 'attachment; filename="firmsift-human-answers.csv"',
                                          "cache-control": "no-store"})

    return [
        Route("/batch/{batch_id}/correct", site.page(correct, csrf=True), methods=["POST"]),
        Route("/human-answers", site.page(listing), methods=["GET"]),
        Route("/human-answers/undo", site.page(undo, csrf=True), methods=["POST"]),
        Route("/human-answers/export.csv", site.page(export), methods=["GET"]),
    ]


def _answer(word: str) -> object:
    """yes/no as a boolean; anything else is passed on as it is, for the service to refuse."""
    try:
        return parse_answer_word(word)
    except ValueError:
        return word or None


def _row_index(fields: Mapping[str, str]) -> int | None:
    """The form's row index; None when left empty (a row the form does not know), 400 bad_index
    when it is not a row index."""
    if not fields.get("index"):
        return None
    return whole_number(fields, "index", low=0, high=LARGEST_ROW_INDEX, default=0)


def _back(batch_id: str, view: str, index: int | None, page_rows: int) -> str:
    """The page the form was on, at its row."""
    if view == "review":
        return f"/batch/{batch_id}/review" + (f"#row-{index}" if index is not None else "")
    if index is None:
        return f"/batch/{batch_id}"
    return f"/batch/{batch_id}?start={index - index % page_rows}#row-{index}"


def _problems(refused: InvalidRequest | UnknownClassifier | HumanAnswerNotFound) -> list[str]:
    """What was wrong, each in a sentence (never echoing a note: it can be long)."""
    if isinstance(refused, InvalidRequest):
        return [rejection.reason for rejection in refused.rejections] or [str(refused)]
    return [str(refused)]


def _shown(human: HumanAnswer) -> dict[str, Any]:
    return {"domain": human.domain, "classifier": human.classifier, "answer_text": answer_word(human.answer),
            "note": human.note, "corrected_by": human.corrected_by,
            "corrected_at": human.corrected_at.isoformat()[:19].replace("T", " ")}


def _undone_notice(undone: Undone) -> str:
    removed, restored = undone.removed, undone.restored
    said = f"Undid the correction of {removed.domain} ({removed.classifier}) to {answer_word(removed.answer)}."
    if restored is None:
        return f"{said} It has no human answer now: later jobs answer it the usual way."
    return f"{said} Restored the earlier correction: {answer_word(restored.answer)}, \u201c{restored.note}\u201d."

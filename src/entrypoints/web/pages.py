"""The web app's pages: the caller's batches, a batch's results (and the rows its script polls
for), the review queue (less the rows a person has corrected since), and the exports (signing in
and out: sign_in.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from firmsift.domain.batch_documents import progress_document
from firmsift.domain.batch_results import rows_per_page
from firmsift.domain.batches import Batch
from firmsift.domain.clock import utc_now
from firmsift.entrypoints.http.batches import FORMATS, result_lines
from firmsift.entrypoints.http.errors import BodyRejected
from firmsift.entrypoints.http.query_numbers import LARGEST_ROW_INDEX, whole_number
from firmsift.entrypoints.web.rows import RowViews
from firmsift.entrypoints.web.site import Site, Visitor
from firmsift.ports.batches import BatchStore
from firmsift.services.batches import find_batch, result_pages

LISTED_BATCHES = 50
PAGE_ROWS = 500  # rows on one page of a batch's table (and in each poll of it), fewer for wide rows
PAGE_CHARS = 4_000_000  # what one page's rows may take in HTML, about
CELL_MARKUP = 40  # what a table cell takes in HTML around its text
WIDEST_ROWS_KEPT = 1000  # batches whose widest row is remembered (then forgotten all at once)
REVIEW_ROWS = 1000  # the review queue shows at most this many rows


def page_routes(site: Site, *, batches: BatchStore, views: RowViews,
                deadline: Callable[[], AbstractAsyncContextManager[None]]) -> list[Route]:

    async def owned(request: Request, visitor: Visitor) -> Batch:
        async with deadline():
            return await find_batch(request.path_params["batch_id"], visitor.caller.owner, batches)

    async def progress(batch: Batch) -> dict[str, Any]:
        async with deadline():
            return progress_document(batch, await batches.counts(batch.id), utc_now())

    # A batch's rows never change once accepted, so neither does its widest: read once per batch,
    # not on each of the page's polls (every 2 s, each a scan of every row).
    widest_rows: dict[str, int] = {}

    async def page_rows(batch: Batch) -> int:
        """PAGE_ROWS, or fewer where the batch's rows are wide: a page's HTML stays bounded."""
        widest = widest_rows.get(batch.id)
        if widest is None:
            async with deadline():
                widest = await batches.widest_row(batch.id)
            if len(widest_rows) >= WIDEST_ROWS_KEPT:
                widest_rows.clear()
            widest_rows[batch.id] = widest
        return rows_per_page(batch, widest, PAGE_ROWS, page_chars=PAGE_CHARS, per_cell=CELL_MARKUP)

    async def rows_of(batch: Batch, start: int, limit: int) -> list[dict[str, Any]]:
        async with deadline():
            return await views.page(batch, start, limit)

    async def home(request: Request, visitor: Visitor) -> Response:
        async with deadline():
            listed = await batches.owned_batches(visitor.caller.owner, LISTED_BATCHES)
        documents = [await progress(batch) for batch in listed]
        return await site.render(request, visitor.session, "batches.html", title="Your batches", batches=documents)

    async def batch_page(request: Request, visitor: Visitor) -> Response:
        batch = await owned(request, visitor)
        try:
            start = _start(request)
        except BodyRejected as refused:
            return await site.render(request, visitor.session, "error.html", status=400, title="No such row",
                                     message=refused.message)
        document = await progress(batch)
        shown = await page_rows(batch)
        return await site.render(request, visitor.session, "batch.html", title=f"Batch {batch.id}", batch=document,
                                 rows=await rows_of(batch, start, shown), start=start, page_rows=shown)

    async def batch_rows(request: Request, visitor: Visitor) -> Response:
        """The table's rows from ?start= as HTML, with the batch's progress, for the page's script."""
        batch = await owned(request, visitor)
        document = await progress(batch)  # first: rows read after it are never older than it says
        rows = await rows_of(batch, _start(request), await page_rows(batch))
        html = await asyncio.to_thread(site.templates.get_template("rows.html").render, rows=rows, view="batch",
                                       csrf=visitor.session.csrf)
        return JSONResponse({"progress": document, "rows_html": html},
                            headers={"cache-control": "no-store"})

    async def review(request: Request, visitor: Visitor) -> Response:
        batch = await owned(request, visitor)
        flagged: list[dict[str, Any]] = []
        corrected = 0  # flagged rows left out: a person has corrected their domain since
        async for page in result_pages(batch, batches):
            for row in await views.views(batch, page):
                if row["review"] and row["human"] is not None:
                    corrected += 1
                elif row["review"] and len(flagged) <= REVIEW_ROWS:  # one more than shown: there are more
                    flagged.append(row)
            if len(flagged) > REVIEW_ROWS:
                break
        return await site.render(request, visitor.session, "review.html", title=f"Review batch {batch.id}",
                                 batch=await progress(batch), rows=flagged[:REVIEW_ROWS], more=len(flagged) > REVIEW_ROWS,
                                 corrected=corrected)

    async def export(request: Request, visitor: Visitor) -> Response:
        batch = await owned(request, visitor)
        wanted = request.path_params["format"]
        if wanted not in FORMATS:
            return await site.render(request, visitor.session, "error.html", status=404, title="No such export",
                                     message=f"Exports are {' and '.join(FORMATS)}.")
        filename = f"firmsift-{batch.id}.{wanted}"
        return StreamingResponse(result_lines(batch, batches, wanted), media_type=FORMATS[wanted],
                                 headers={"content-disposition": f'attachment; filename="{filename}"'})

    return [
        Route("/", site.page(home), methods=["GET"]),
        Route("/batch/{batch_id}", site.page(batch_page), methods=["GET"]),
        Route("/batch/{batch_id}/rows", site.page(batch_rows), methods=["GET"]),
        Route("/batch/{batch_id}/review", site.page(review), methods=["GET"]),
        Route("/batch/{batch_id}/export.{format:str}", site.page(export), methods=["GET"]),
    ]


def _start(request: Request) -> int:
    """The row ?start= names (default 0); 400 bad_start for anything but a row index."""
    return whole_number(request.query_params, "start", low=0, high=LARGEST_ROW_INDEX, default=0)


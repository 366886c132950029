"""The web app's batch buttons: cancel what has not started, retry the failed rows (the API's
DELETE /batches/{id} and POST /batches/{id}/retry), each a CSRF-checked form that comes back to the
batch page with a notice saying what was done."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from firmsift.domain.batches import BatchCancelledAlready
from firmsift.entrypoints.web.site import Site, Visitor
from firmsift.ports.batches import BatchStore
from firmsift.ports.infrastructure_errors import QueueUnavailable
from firmsift.ports.queue import WorkQueue
from firmsift.services.batch_retry import retry_failed_rows
from firmsift.services.batches import BatchReplies, cancel_batch, find_batch


def batch_action_routes(site: Site, *, batches: BatchStore, replies: BatchReplies, queue: WorkQueue,
                        deadline: Callable[[], AbstractAsyncContextManager[None]]) -> list[Route]:

    async def cancel(request: Request, visitor: Visitor) -> Response:
        async with deadline():
            batch = await find_batch(request.path_params["batch_id"], visitor.caller.owner, batches)
            cancelled = await cancel_batch(batch, batches, replies)
        notice = (f"Cancelled {cancelled} job(s) that had not started; work started or finished is kept."
                  if cancelled else "Nothing to cancel: every job had started or finished.")
        return await _back(site, visitor, batch.id, notice)

    async def retry(request: Request, visitor: Visitor) -> Response:
        async with deadline():
            batch = await find_batch(request.path_params["batch_id"], visitor.caller.owner, batches)
            try:
                retried = await retry_failed_rows(batch, batches, queue)
            except BatchCancelledAlready as refused:
                return await _back(site, visitor, batch.id, f"Not retried: {refused}.")
            except QueueUnavailable:
                return await _back(site, visitor, batch.id, "Not retried: the work queue refused it; try again.")
        notice = (f"Queued {retried} job(s) with failed rows again; answered rows are kept." if retried
                  else "Nothing to retry: no row had failed.")
        return await _back(site, visitor, batch.id, notice)

    return [
        Route("/batch/{batch_id}/cancel", site.page(cancel, csrf=True), methods=["POST"]),
        Route("/batch/{batch_id}/retry", site.page(retry, csrf=True), methods=["POST"]),
    ]


async def _back(site: Site, visitor: Visitor, batch_id: str, notice: str) -> Response:
    await site.sessions.leave_notice(visitor.session, notice)
    return RedirectResponse(f"/batch/{batch_id}", status_code=303)

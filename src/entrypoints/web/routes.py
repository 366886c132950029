"""The web app's routes, served at `/` beside the API's (see wiring/http_app.py)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from firmsift.entrypoints.http.auth import Gate
from firmsift.entrypoints.http.body_passes import BodyPasses
from firmsift.entrypoints.settings import Settings
from firmsift.entrypoints.web.batch_actions import batch_action_routes
from firmsift.entrypoints.web.corrections import correction_routes
from firmsift.entrypoints.web.pages import PAGE_ROWS, page_routes
from firmsift.entrypoints.web.rows import RowViews
from firmsift.entrypoints.web.sign_in import sign_in_routes
from firmsift.entrypoints.web.site import Site
from firmsift.entrypoints.web.submit import submit_routes
from firmsift.services.api import Api

STATIC = Path(__file__).parent / "static"


def web_routes(api: Api, *, settings: Settings, gate: Gate, deadline: Callable[[], AbstractAsyncContextManager[None]],
               passes: BodyPasses, warning: str | None = None,
               clock: Callable[[], float] | None = None) -> list[BaseRoute]:
    """The pages over `api`, on the site's `gate`, backend `deadline` and upload `passes`; `clock`
    (a test's, else the real time) times the sign-in forms and their limit."""
    site = Site(gate, api.web_sessions, warning)
    views = RowViews(api.catalog, api.batches, api.known, api.human_answers)
    return [
        *sign_in_routes(site, attempts_per_minute=settings.sign_ins_per_minute, clock=clock),
        *page_routes(site, batches=api.batches, views=views, deadline=deadline),
        *batch_action_routes(site, batches=api.batches, replies=api.batch_replies, queue=api.work_queue,
                             deadline=deadline),
        *correction_routes(site, catalog=api.catalog, batches=api.batches, views=views, humans=api.human_answers,
                           page_rows=PAGE_ROWS, deadline=deadline),
        *submit_routes(site, settings=settings, catalog=api.catalog, intake=api.batch_intake, batches=api.batches,
                       replies=api.batch_replies, budgets=api.budgets, estimator=api.estimator, deadline=deadline,
                       passes=passes),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]

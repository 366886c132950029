"""The web app's routes, served at `/` beside the API's (see wiring/http_app.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path

from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from firmsift.domain.model import Classifier
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
from firmsift.ports.batches import BatchIntake, BatchStore
from firmsift.ports.human_answers import HumanAnswerStore
from firmsift.ports.queue import WorkQueue
from firmsift.ports.repository import KnownCompanies
from firmsift.ports.web_sessions import WebSessions
from firmsift.services.batch_estimate import BatchEstimator
from firmsift.services.batches import BatchReplies
from firmsift.services.budgets import Budgets

STATIC = Path(__file__).parent / "static"


def web_routes(*, settings: Settings, catalog: Mapping[str, Classifier], gate: Gate, intake: BatchIntake,
               batches: BatchStore, replies: BatchReplies, budgets: Budgets, estimator: BatchEstimator,
               known: KnownCompanies, humans: HumanAnswerStore, sessions: WebSessions,
               deadline: Callable[[], AbstractAsyncContextManager[None]], queue: WorkQueue, passes: BodyPasses,
               warning: str | None = None, clock: Callable[[], float] | None = None) -> list[BaseRoute]:
    """`clock` (a test's, else the real time) times the sign-in forms and their limit."""
    site = Site(gate, sessions, warning)
    views = RowViews(catalog, batches, known, humans)
    return [
        *sign_in_routes(site, attempts_per_minute=settings.sign_ins_per_minute, clock=clock),
        *page_routes(site, batches=batches, views=views, deadline=deadline),
        *batch_action_routes(site, batches=batches, replies=replies, queue=queue, deadline=deadline),
        *correction_routes(site, catalog=catalog, batches=batches, views=views, humans=humans, page_rows=PAGE_ROWS,
                           deadline=deadline),
        *submit_routes(site, settings=settings, catalog=catalog, intake=intake, batches=batches, replies=replies,
                       budgets=budgets, estimator=estimator, deadline=deadline, passes=passes),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]

"""The composition root: settings -> adapters -> use-cases, for every process of firmsift. The
graphs it composes are wired in storage.py, queues.py, external.py,
http.py and worker.py; with lazy_adapters.py (the adapters whose SDKs are imported
on demand) and memory.py (the in-memory graph), they are the only place naming concrete
adapters."""

from __future__ import annotations

from dependency_injector import providers

from firmsift.adapters.files.completion_cache import CompletionCacheFile
from firmsift.adapters.files.evidence_snapshots import SnapshotFiles
from firmsift.entrypoints.wiring.http import HttpWiring
from firmsift.entrypoints.wiring.lazy_adapters import make_eval_pricing
from firmsift.entrypoints.wiring.external import ProviderWiring
from firmsift.entrypoints.wiring.worker import WorkerWiring, settings_precheck
from firmsift.services.admin import Admin


class Container(HttpWiring, WorkerWiring):
    """Every object graph of firmsift: the API's (`api`), a worker's, `firmsift eval`'s and the commands'.

    Each graph it inherits is a container of its own, over the same settings and storage, so one
    instance holds one engine, one queue and one metrics registry for all of them. It also owns what
    must be closed: the engine and the SQS client are Resources, closed by
    `container.shutdown_resources()` when the command ends; HTTP clients are closed as the event
    loop that used them leaves `async with container.http_clients():`.
    In-memory adapters replace the real ones in memory.in_memory_container.
    """

    resolver, homepage, signatures = ProviderWiring.resolver, ProviderWiring.homepage, ProviderWiring.signatures

    # `firmsift eval`: evidence snapshots (call with a folder), the LLM response cache (call with
    # a file), model prices (call with per-model price overrides, the locally served models and
    # the models served by litellm).
    eval_snapshots = providers.Factory(SnapshotFiles)
    eval_cache = providers.Factory(CompletionCacheFile)
    eval_pricing = providers.Factory(make_eval_pricing)
    # The pre-check the eval runs once per labelled domain: the worker's resolver, homepage reader,
    # signatures and trust in negative DNS answers (its cache time and redirect reuse concern stored
    # answers, which an eval has none of).
    eval_precheck = providers.Singleton(settings_precheck, WorkerWiring.settings, resolver, homepage, signatures)

    # What the operator commands may do (services/admin.py): keys, answers, companies, batch,
    # refresh, forget, dlq.
    admin = providers.Singleton(
        Admin, catalog=HttpWiring.catalog, max_domains_per_job=HttpWiring.settings.provided.max_domains_per_job,
        max_domains_per_batch=HttpWiring.settings.provided.max_domains_per_batch, api_keys=HttpWiring.api_keys,
        budgets=HttpWiring.budgets, human_answers=HttpWiring.human_answers, jobs=HttpWiring.store,
        answers=HttpWiring.store, known=HttpWiring.store, batches=HttpWiring.batches,
        batch_replies=HttpWiring.batch_replies, work_queue=HttpWiring.work_queue,
        batch_intake=HttpWiring.batch_intake, deferred_questions=WorkerWiring.deferred_questions)

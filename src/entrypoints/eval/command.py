"""`firmsift eval`: score candidates (model x prompt x search provider) on a labelled set of domains."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from firmsift.domain.errors import FirmsiftError
from firmsift.domain.evaluation import LabelledDomain, Outcome
from firmsift.domain.known_companies import with_parents
from firmsift.domain.model import Classifier, KnownCompany
from firmsift.entrypoints.eval.backends import CandidateBackends, EvaluationBackends, RetryCounts, UnreadableFile
from firmsift.entrypoints.eval.document import report_document
from firmsift.entrypoints.eval.human_labels import human_labels, labels_name
from firmsift.entrypoints.eval.inputs import CandidateDeclaration, EvalInputError, read_candidates, read_labels
from firmsift.entrypoints.eval.progress import ProgressBar
from firmsift.entrypoints.eval.report import summary_table, write_reports
from firmsift.entrypoints.files.csv_files import CsvFileError
from firmsift.entrypoints.settings import ConfigurationError
from firmsift.ports.infrastructure_errors import DatabaseFailure, InvalidDatabaseUrl
from firmsift.services.evaluation_precheck import LiveSiteStatuses, ReplayedSiteStatuses, SiteStatuses
from firmsift.services.evaluation_run import (
    Candidate,
    CandidateSpec,
    Evaluation,
    EvidenceSource,
    LiveEvidence,
    MissingSnapshots,
    ReplayedEvidence,
    evaluate,
)

EVIDENCE_MODES = {"live": "live", "record": "recorded", "replay": "replayed"}


def run_eval(args: argparse.Namespace, backends: EvaluationBackends) -> int:
    """Exit 0 once the reports are written; usage errors raise ConfigurationError (exit 2).
    `backends` is what the run takes from outside, from the wiring (wiring/evaluation.py)."""
    settings = backends.settings
    mode = "record" if args.record else "replay" if args.replay else "live"
    labels_source, stem = labels_name(args)
    folder = args.output or Path("eval-reports") / f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{stem}"
    try:
        labels = (human_labels(backends, args.classifier) if args.human_labels
                  else read_labels(args.labels))[: args.limit]
        # Every folder written to is checked before anything is paid for.
        _writable_folder(folder, "--output")
        if mode == "record":
            _writable_folder(args.snapshots, "--snapshots")
        declarations = (read_candidates(args.candidates) if args.candidates
                        else [CandidateDeclaration(name=settings.llm_model)])
        cache = None if args.no_cache else backends.completion_cache(args.cache)
        site_statuses = _site_statuses(backends, args, mode)
        # A domain the recorded pre-check ended was never searched: its replay needs no evidence.
        needed = [i.domain for i in labels
                  if not (isinstance(site_statuses, ReplayedSiteStatuses) and site_statuses.ends(i.domain))]
        candidates = _candidates(declarations, backends, args, mode, needed)
    except (EvalInputError, CsvFileError, UnreadableFile, MissingSnapshots) as error:
        raise ConfigurationError(str(error)) from None
    except OSError as error:
        raise ConfigurationError(f"{error.filename or 'a file'}: {error.strerror or error}") from None
    prices = {c.spec.model: (d.input_cost_per_million, d.output_cost_per_million)
              for (c, _), d in zip(candidates, declarations, strict=True)
              if d.input_cost_per_million is not None and d.output_cost_per_million is not None}
    # A local server costs nothing per token: no price from litellm's map unless the candidate gave one.
    local = {c.spec.model for c, graph in candidates if graph.local}
    on_litellm = {c.spec.model for c, graph in candidates if graph.on_litellm}
    run = Evaluation(labels, [c for c, _ in candidates], backends.pricing(prices, local, on_litellm), cache=cache,
                     known=_known(args, labels, backends), site_statuses=site_statuses,
                     concurrency=args.concurrency or settings.llm_concurrency, on_progress=ProgressBar())
    started = datetime.now(UTC)
    try:
        outcomes = asyncio.run(_evaluate(run, backends))
    except ExceptionGroup as group:
        failed = group.subgroup(OSError)  # the cache could not be written (disk full): stop and say so
        if failed is None:
            raise
        error = _first(failed)
        raise FirmsiftError(f"eval stopped: cannot write {error.filename or 'the LLM cache'}: "
                            f"{error.strerror or error}") from None
    except KeyboardInterrupt:
        kept = f"; {len(cache)} answers are cached in {args.cache}" if cache is not None else ""
        print(f"\nfirmsift eval: interrupted{kept}: run the same command again to resume", file=sys.stderr)
        return 130
    document = report_document(labels_file=labels_source, labels=labels, evidence=EVIDENCE_MODES[mode],
                               precheck=site_statuses is not None,
                               started_at=started, finished_at=datetime.now(UTC),
                               specs=[c.spec for c, _ in candidates], outcomes=outcomes,
                               local={c.spec.name for c, graph in candidates if graph.local})
    retries: Mapping[str, RetryCounts] = {c.spec.name: graph.retries for c, graph in candidates}
    for candidate in document["candidates"]:
        tally = retries[candidate["name"]]
        candidate["retries"] = {"total": tally.total, "by_cause": dict(tally.by_cause.most_common())}
    written = write_reports(document, folder)
    print(summary_table(document))
    for name, tally in retries.items():
        print(f"LLM retries for {name}: {tally.summary()}", file=sys.stderr)
    print("reports: " + ", ".join(str(path) for path in written), file=sys.stderr)
    return 0


def _first(group: BaseExceptionGroup[OSError]) -> OSError:
    error: OSError | BaseExceptionGroup[OSError] = group
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


def _writable_folder(folder: Path, option: str) -> None:
    """Refuse now a folder that could not be written at the end; create nothing yet."""
    if folder.exists() and not folder.is_dir():
        raise ConfigurationError(f"{option} {folder}: is a file, not a folder")
    existing = next(p for p in (folder, *folder.absolute().parents) if p.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigurationError(f"{option} {folder}: cannot create or write it ({existing} is not a writable folder)")


def _candidates(declarations: Sequence[CandidateDeclaration], backends: EvaluationBackends,
                args: argparse.Namespace, mode: str,
                needed: Sequence[str]) -> list[tuple[Candidate, CandidateBackends]]:
    """Each candidate with its classifier, its LLM as the worker wraps it (rate budget, retries,
    counted by cause in its graph's `retries`), and its evidence source: one per search provider,
    shared by the candidates that use it (on replay, holding every `needed` domain); each beside
    the graph it was built from (what serves its model, its retries)."""
    snapshots = backends.snapshots(args.snapshots)
    catalog = backends.catalog()
    sources: dict[str, EvidenceSource] = {}
    candidates: list[tuple[Candidate, CandidateBackends]] = []
    for declaration in declarations:
        graph = backends.candidate(declaration)
        settings = graph.settings
        provider = settings.search_provider
        if provider not in sources:
            sources[provider] = (ReplayedEvidence(snapshots, provider, needed) if mode == "replay"
                                 else LiveEvidence(graph.search(), provider,
                                                   record_to=snapshots if mode == "record" else None))
        classifier = _classifier(declaration, catalog, args.classifier, backends)
        spec = CandidateSpec(declaration.name, settings.llm_model, settings.llm_api_base,
                             classifier.name, classifier.prompt_version, provider, settings.llm_max_tokens)
        candidates.append((Candidate(spec, classifier, graph.llm(), sources[provider]), graph))
    return candidates


def _site_statuses(backends: EvaluationBackends, args: argparse.Namespace, mode: str) -> SiteStatuses | None:
    """The pre-check, as the worker runs it: on when FIRMSIFT_PRECHECK is (the default) unless
    --no-precheck; live (and recorded with --record), or the recorded statuses with --replay."""
    if args.no_precheck or not backends.settings.precheck:
        return None
    snapshots = backends.snapshots(args.snapshots)
    if mode == "replay":
        return ReplayedSiteStatuses(snapshots)
    return LiveSiteStatuses(backends.precheck(), record_to=snapshots if mode == "record" else None)


async def _evaluate(run: Evaluation, backends: EvaluationBackends) -> dict[str, tuple[Outcome, ...]]:
    async with backends.http_clients():  # the candidates' search clients: replayed evidence opened none
        return await evaluate(run)


def _classifier(declaration: CandidateDeclaration, catalog: Mapping[str, Classifier], default: str,
                backends: EvaluationBackends) -> Classifier:
    if declaration.classifier_file is not None:
        try:
            text = declaration.classifier_file.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigurationError(f"candidate {declaration.name!r}: cannot read classifier_file: {error}") from None
        try:
            return backends.parse_classifier(str(declaration.classifier_file), text)
        except UnreadableFile as error:
            raise ConfigurationError(f"candidate {declaration.name!r}: {error}") from None
    name = declaration.classifier or default
    if name not in catalog:
        raise ConfigurationError(f"candidate {declaration.name!r}: no classifier named {name!r} "
                                 f"(configured: {', '.join(sorted(catalog))})")
    return catalog[name]


def _known(args: argparse.Namespace, labels: Sequence[LabelledDomain],
           backends: EvaluationBackends) -> dict[str, KnownCompany]:
    """The known companies among the labelled domains (and their parents), read from the
    database only when asked: by default an evaluation scores the search + LLM path alone.
    The schema is never migrated here, nor an empty database created: an evaluation does not
    change a database."""
    if not args.known_companies:
        return {}
    try:
        known = backends.known_companies("eval --known-companies")
        return asyncio.run(known.find_known(with_parents([i.domain for i in labels])))
    except (DatabaseFailure, InvalidDatabaseUrl) as error:
        kind = type(error.__cause__).__name__  # SQLAlchemy's class for it: OperationalError, ProgrammingError...
        raise ConfigurationError(f"--known-companies: cannot read the known companies from the database "
                                 f"({kind}); is FIRMSIFT_DATABASE_URL right and migrated "
                                 f"(`firmsift db upgrade`)?") from None
    finally:
        backends.close()

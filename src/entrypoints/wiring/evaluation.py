"""What `firmsift eval` is given (eval/backends.py EvaluationBackends), on the container: the run's
own graph over the settings, and one graph per candidate over that candidate's settings. The
adapters' file errors are told to eval as its UnreadableFile."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

from dependency_injector import providers
from pydantic import SecretStr

from firmsift.adapters.decorators.retrier import RetryTally
from firmsift.adapters.files.classifiers import ClassifierFileError
from firmsift.adapters.files.classifiers import parse_classifier as parse_classifier_file
from firmsift.adapters.files.evidence_snapshots import SnapshotFiles
from firmsift.adapters.files.jsonl import JsonlFileError
from firmsift.adapters.files.site_signatures import SignatureFileError
from firmsift.adapters.llm.endpoint import is_local_api_base
from firmsift.domain.evaluation import GatheredEvidence
from firmsift.domain.model import Classifier
from firmsift.domain.site_status import SiteVerdict
from firmsift.entrypoints.eval.backends import EvaluationBackends, KeptCompletions, UnreadableFile
from firmsift.entrypoints.eval.inputs import CandidateDeclaration
from firmsift.entrypoints.settings import ConfigurationError, Settings
from firmsift.entrypoints.wiring.container import Container
from firmsift.entrypoints.wiring.database_file import database_to_create
from firmsift.entrypoints.wiring.lazy_adapters import LOCAL_SERVER_PLACEHOLDER_KEY, uses_direct_llm_client
from firmsift.ports.human_answers import HumanAnswerStore
from firmsift.ports.providers import LLM, Pricing, Search
from firmsift.ports.repository import KnownCompanies
from firmsift.services.precheck import Precheck


@contextlib.contextmanager
def _readable() -> Iterator[None]:
    """The adapters' errors for a file not in its format, as eval's UnreadableFile (same message)."""
    try:
        yield
    except (ClassifierFileError, JsonlFileError, SignatureFileError) as error:
        raise UnreadableFile(str(error)) from error


class _Snapshots:
    """Evidence snapshot files whose loads raise UnreadableFile."""

    def __init__(self, files: SnapshotFiles) -> None:
        self._files = files

    def load(self, provider: str) -> dict[str, GatheredEvidence]:
        with _readable():
            return self._files.load(provider)

    def save(self, provider: str, domain: str, gathered: GatheredEvidence) -> None:
        self._files.save(provider, domain, gathered)

    def load_site_statuses(self) -> dict[str, SiteVerdict]:
        with _readable():
            return self._files.load_site_statuses()

    def save_site_status(self, domain: str, verdict: SiteVerdict) -> None:
        self._files.save_site_status(domain, verdict)


class CandidateGraph:
    """One candidate's graph: a container over its settings, its LLM retries counted in `retries`,
    its LLM paced in memory (an evaluation uses no database), its HTTP clients opened among the
    run's, so that they close when the run ends."""

    def __init__(self, run: Container, settings: Settings) -> None:
        self.retries = RetryTally()
        self._container = Container(settings=settings)
        self._container.llm_retry_tally.override(providers.Object(self.retries))
        self._container.llm_pacing.override(run.local_pacing)
        self._container.http_clients.override(run.http_clients)

    @property
    def settings(self) -> Settings:
        return self._container.settings()

    @property
    def local(self) -> bool:
        return is_local_api_base(self.settings.llm_api_base)

    @property
    def on_litellm(self) -> bool:
        return not uses_direct_llm_client(self.settings)

    def llm(self) -> LLM:
        return self._container.worker_llm()

    def search(self) -> Search:
        with _readable():
            return self._container.worker_search()


class ContainerEvaluation:
    """EvaluationBackends on the container of the run's settings."""

    def __init__(self, container: Container) -> None:
        self._container = container

    @property
    def settings(self) -> Settings:
        return self._container.settings()

    def human_answers(self, command: str) -> HumanAnswerStore:
        database_to_create(self.settings, command)  # refuses to create an empty one
        return self._container.human_answers()

    def known_companies(self, command: str) -> KnownCompanies:
        database_to_create(self.settings, command)  # refuses to create an empty one
        return self._container.store()

    def close(self) -> None:
        self._container.shutdown_resources()

    def catalog(self) -> Mapping[str, Classifier]:
        with _readable():
            return self._container.catalog()

    def parse_classifier(self, origin: str, text: str) -> Classifier:
        with _readable():
            return parse_classifier_file(origin, text)

    def completion_cache(self, path: Path) -> KeptCompletions:
        with _readable():
            return self._container.eval_cache(path)

    def snapshots(self, folder: Path) -> _Snapshots:
        return _Snapshots(self._container.eval_snapshots(folder))

    def precheck(self) -> Precheck:
        with _readable():
            return self._container.eval_precheck()

    def candidate(self, declaration: CandidateDeclaration) -> CandidateGraph:
        return CandidateGraph(self._container, candidate_settings(self.settings, declaration))

    def pricing(self, prices: Mapping[str, tuple[float, float]], unpriced: Collection[str],
                on_litellm: Collection[str]) -> Pricing:
        return self._container.eval_pricing(dict(prices), unpriced, on_litellm)

    def http_clients(self) -> contextlib.AsyncExitStack:
        return self._container.http_clients()


def evaluation_backends(settings: Settings) -> EvaluationBackends:
    """What `firmsift eval` runs on, from the settings; nothing is opened until asked for."""
    return ContainerEvaluation(Container(settings=settings))


def candidate_settings(base: Settings, declaration: CandidateDeclaration) -> Settings:
    """The settings with this candidate's model, API base, key and search provider in place.
    Built anew (not copied) so the settings' own checks run on the combination."""
    overrides: dict[str, Any] = {}
    if declaration.model:
        overrides["llm_model"] = declaration.model
    if declaration.api_base:
        overrides["llm_api_base"] = declaration.api_base
        # A server the candidate names gets only the key the candidate names: never the
        # settings' or OPENAI_API_KEY, which belong to another provider.
        overrides["llm_api_key"] = SecretStr(LOCAL_SERVER_PLACEHOLDER_KEY)
    if declaration.search:
        overrides["search_provider"] = declaration.search
    if declaration.max_tokens:
        overrides["llm_max_tokens"] = declaration.max_tokens
    if declaration.api_key_env:
        key = os.environ.get(declaration.api_key_env)
        if not key:
            raise ConfigurationError(f"candidate {declaration.name!r}: api_key_env names "
                                     f"{declaration.api_key_env}, which is not set")
        overrides["llm_api_key"] = SecretStr(key)
    return Settings(**overrides) if overrides else base

"""What `firmsift eval` is handed: one object, built by the wiring (wiring/evaluation.py) from the
settings, holding everything the run reaches outside itself. Eval names no adapter and builds no
container: it asks this object for each part, and the wiring decides what answers."""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from firmsift.ports.evaluation import CompletionCache

if TYPE_CHECKING:
    from firmsift.domain.model import Classifier
    from firmsift.entrypoints.eval.inputs import CandidateDeclaration
    from firmsift.entrypoints.settings import Settings
    from firmsift.ports.evaluation import EvidenceSnapshots
    from firmsift.ports.human_answers import HumanAnswerStore
    from firmsift.ports.providers import LLM, Pricing, Search
    from firmsift.ports.repository import KnownCompanies
    from firmsift.services.precheck import Precheck


class UnreadableFile(ValueError):
    """A file the run reads is not what its format says: a classifier definition, the pre-check's
    signatures, the LLM cache or an evidence snapshot. The message names the file and the problem."""


class RetryCounts(Protocol):
    """One candidate's LLM retries, counted by cause instead of logged one by one."""

    @property
    def by_cause(self) -> Counter[str]: ...

    @property
    def total(self) -> int: ...

    def summary(self) -> str:
        """"12 retries (timeout 8, rate limited 4)", most frequent cause first; "no retries"."""


class KeptCompletions(CompletionCache, Protocol):
    """The LLM cache of a run, which says how many answers it holds (told when a run is interrupted)."""

    def __len__(self) -> int: ...


class CandidateBackends(Protocol):
    """One candidate's graph, as a worker on its settings would run it: its LLM paced in memory
    and retried (the retries counted in `retries`), its search chain; both on the run's HTTP
    clients, so they close as the run leaves `EvaluationBackends.http_clients()`. Each part is
    built when first asked for: a replay never builds a search."""

    @property
    def settings(self) -> Settings:
        """The run's settings with the candidate's model, API base, key, search provider and token limit."""

    @property
    def retries(self) -> RetryCounts: ...

    @property
    def local(self) -> bool:
        """Its LLM is a server of the user's own (loopback, private network): no price per token."""

    @property
    def on_litellm(self) -> bool:
        """Its model is served through litellm (else by the direct OpenAI-compatible client)."""

    def llm(self) -> LLM: ...

    def search(self) -> Search:
        """Raises UnreadableFile when the pre-check's signatures (the homepage reader's) are unreadable."""


class EvaluationBackends(Protocol):
    """Everything `firmsift eval` takes from outside: settings, the database (read only), files
    in their formats, the pre-check, and each candidate's graph."""

    @property
    def settings(self) -> Settings: ...

    def human_answers(self, command: str) -> HumanAnswerStore:
        """The database's human answers, its schema never migrated. ConfigurationError when the
        SQLite file is missing (an evaluation creates no database; `command` is named in the message)."""

    def known_companies(self, command: str) -> KnownCompanies:
        """The database's known companies, as human_answers."""

    def close(self) -> None:
        """Close the database, if it was opened (asked again, it opens anew)."""

    def catalog(self) -> Mapping[str, Classifier]:
        """The configured classifiers by name. Raises UnreadableFile."""

    def parse_classifier(self, origin: str, text: str) -> Classifier:
        """A classifier definition from a file's text (`origin` names it in errors). Raises UnreadableFile."""

    def completion_cache(self, path: Path) -> KeptCompletions:
        """The LLM cache in `path`, created if missing. Raises UnreadableFile, OSError."""

    def snapshots(self, folder: Path) -> EvidenceSnapshots:
        """The evidence snapshots in `folder`; loading them raises UnreadableFile."""

    def precheck(self) -> Precheck:
        """The worker's pre-check (resolver, homepage reader, signatures). Raises UnreadableFile."""

    def candidate(self, declaration: CandidateDeclaration) -> CandidateBackends:
        """One candidate's graph. ConfigurationError when its key variable is unset; the settings'
        own errors when the combination is invalid."""

    def pricing(self, prices: Mapping[str, tuple[float, float]], unpriced: Collection[str],
                on_litellm: Collection[str]) -> Pricing:
        """Token prices: `prices` (USD per million, by model) first; the models in `unpriced` have
        none unless given; read without litellm unless a model in `on_litellm` needs it."""

    def http_clients(self) -> AbstractAsyncContextManager[Any]:
        """Entered around the run on its event loop: the HTTP clients opened in it close as it leaves."""

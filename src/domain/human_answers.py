"""Human answers: a person's correction of the answer for one (domain, classifier), which every
later job and batch uses before any other path, and the rule for reading one from outside."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from firmsift.domain.errors import FirmsiftError, InvalidRequest, Rejection
from firmsift.domain.model import DomainResult, ResultStatus, Source
from firmsift.domain.normalize import DomainRejected, normalize_domain
from firmsift.domain.outside_text import unstorable_reason

MAX_NOTE_CHARS = 1000  # a sentence or a paragraph of why; the note is shown as the answer's reason
HUMAN_CONFIDENCE = 5  # a person looked at this very domain
_YES, _NO = frozenset({"yes", "true"}), frozenset({"no", "false"})


@dataclass(frozen=True)
class HumanAnswer:
    """The answer a person set for (domain, classifier), why, who (an API key id; None when set
    without keys or from the command line) and when."""

    domain: str
    classifier: str
    answer: bool
    note: str
    corrected_by: str | None
    corrected_at: datetime

    @property
    def key(self) -> tuple[str, str]:
        """Its place in listings and the listing's paging key: (classifier, domain)."""
        return self.classifier, self.domain

    def same_correction(self, other: HumanAnswer | None) -> bool:
        """Whether `other` says the same thing (answer and note): setting it again changes nothing."""
        return other is not None and (other.answer, other.note) == (self.answer, self.note)


def read_human_answer(domain: object, classifier: str, answer: object, note: object, *,
                      corrected_by: str | None, corrected_at: datetime) -> HumanAnswer:
    """A HumanAnswer from outside values: the domain normalized (DESIGN.md's rule), the answer a
    boolean, the note a non-blank text of at most MAX_NOTE_CHARS (trimmed). Raises InvalidRequest
    listing every value refused and why."""
    problems: list[Rejection] = []
    try:
        normalized = read_answer_domain(domain)
    except InvalidRequest as refused:
        problems.extend(refused.rejections)
        normalized = ""
    if not isinstance(answer, bool):
        problems.append(Rejection(answer, "answer must be true or false"))
    if not isinstance(note, str) or not note.strip():
        problems.append(Rejection(note, "note is required: say why the answer is corrected"))
    elif len(note.strip()) > MAX_NOTE_CHARS:
        problems.append(Rejection(note, f"note is longer than {MAX_NOTE_CHARS} characters"))
    elif (reason := unstorable_reason(note)) is not None:
        problems.append(Rejection(note, f"note {reason}"))
    if problems:
        raise InvalidRequest("invalid human answer", tuple(problems))
    assert isinstance(answer, bool) and isinstance(note, str)
    return HumanAnswer(normalized, classifier, answer, note.strip(), corrected_by, corrected_at)


def read_answer_domain(domain: object) -> str:
    """The domain normalized (DESIGN.md's rule), or InvalidRequest saying which and why."""
    try:
        return normalize_domain(domain)
    except DomainRejected as rejected:
        raise InvalidRequest("invalid domain", (Rejection(domain, f"domain {_shown(domain)} {rejected}"),)) from None


def parse_answer_word(word: str) -> bool:
    """yes/no or true/false (any case, trimmed) as a boolean; ValueError for anything else."""
    folded = word.strip().lower()
    if folded in _YES | _NO:
        return folded in _YES
    raise ValueError(f"answer {word!r} must be yes, no, true or false")


def human_result(human: HumanAnswer) -> DomainResult:
    """What a human answer gives a job: DONE, confidence 5, the note as the reason, source
    `human`, nothing spent and no LLM call behind it."""
    return DomainResult(domain=human.domain, status=ResultStatus.DONE, answer=human.answer,
                        confidence=HUMAN_CONFIDENCE, reason=human.note, source=Source.HUMAN,
                        tokens_in=0, tokens_out=0, cost_usd=0.0)


class HumanAnswerNotFound(FirmsiftError):
    """There is no human answer for (domain, classifier) to undo."""

    code = "human_answer_not_found"

    def __init__(self, domain: str, classifier: str) -> None:
        super().__init__(f"no human answer for {domain} ({classifier}) to undo")
        self.domain = domain
        self.classifier = classifier


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:80] + "…"

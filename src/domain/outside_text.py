"""Text from outside (model output, evidence, provider errors, imported names) made storable."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from firmsift.domain.errors import FirmsiftError
from firmsift.domain.model import Answer, Completion, DomainResult, Evidence

REPLACEMENT = "\N{REPLACEMENT CHARACTER}"


class UnstorableText(FirmsiftError):
    """A value the database cannot hold reached a store (a path that skipped `storable`, or a
    database whose encoding is narrower than Unicode). Nothing was written."""

    code = "unstorable_text"


def storable(text: str) -> str:
    """`text` with what no database column can hold replaced by U+FFFD: a lone surrogate (which
    has no UTF-8 form; a well-formed pair becomes its character) and NUL (which PostgreSQL text
    refuses). Every other character is kept, so clean text passes unchanged."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # UTF-16 round trip: pairs are joined into their character, lone halves replaced.
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text.replace("\x00", REPLACEMENT)


def unstorable_reason(text: str) -> str | None:
    """Why `text` cannot be stored as it is, or None when it can (the rule `storable` enforces)."""
    if "\x00" in text:
        return "holds a NUL character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "holds an unpaired surrogate (no UTF-8 form)"
    return None


def storable_error(error: BaseException) -> str:
    """An exception's message, storable: providers' and queues' errors quote what they received."""
    return storable(str(error))


def storable_completion(completion: Completion) -> Completion:
    """The completion with its text and model name storable, as the domain keeps them."""
    return replace(completion, text=storable(completion.text), model=storable(completion.model))


def storable_evidence(evidence: Iterable[Evidence]) -> list[Evidence]:
    """Evidence with url, title and snippet storable (search results and fetched pages)."""
    return [Evidence(url=storable(e.url), title=storable(e.title), snippet=storable(e.snippet)) for e in evidence]


def check_storable(result: DomainResult, answer: Answer | None) -> None:
    """Raise UnstorableText naming the first text of `result` or `answer` that cannot be stored:
    the check every store makes before writing, so all of them refuse the same values."""
    texts = [("reason", result.reason), ("error", result.error), ("evidence status", result.evidence_status),
             ("quote", result.quote), *_evidence_texts(result.evidence)]
    if answer is not None:
        texts += [("raw output", answer.raw_output), ("model", answer.model), ("reason", answer.reason),
                  ("error", answer.error), ("evidence status", answer.evidence_status), ("quote", answer.quote),
                  *_evidence_texts(answer.evidence)]
    for name, value in texts:
        reason = unstorable_reason(value) if value is not None else None
        if reason is not None:
            raise UnstorableText(f"the {name} of {result.domain} {reason}")


def _evidence_texts(evidence: Iterable[Evidence]) -> list[tuple[str, str | None]]:
    return [(f"evidence {name}", value) for e in evidence
            for name, value in (("url", e.url), ("title", e.title), ("snippet", e.snippet))]

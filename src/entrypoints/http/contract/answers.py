"""The answer bodies: PUT /answers/{classifier}/{domain} (set a human answer), its DELETE (undo), GET
/answers (a page) and POST /answers/forget (cached answers forgotten)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, WithJsonSchema

from firmsift.domain.human_answers import MAX_NOTE_CHARS
from firmsift.entrypoints.http.contract.body import Body, configured


class HumanAnswer(Body):
    """An answer a person set for (domain, classifier)."""

    domain: str = Field(description="normalized")
    classifier: Annotated[str, WithJsonSchema({"type": "string", **configured(enum="classifiers")})]
    answer: bool
    source: Literal["human"]
    note: str = Field(min_length=1, max_length=MAX_NOTE_CHARS,
                      description="why: shown as the reason of every result it gives")
    corrected_by: str | None = Field(description="the id of the API key that set it; null without keys or from the CLI")
    corrected_at: datetime


class HumanAnswerSet(HumanAnswer):
    """The human answer stored, and the one it replaced."""

    replaced: HumanAnswer | None = Field(description=(
        "the human answer this one replaced (what DELETE restores), null when there was none; when `changed` is "
        "false, the stored one itself, which stays"))
    changed: bool = Field(description="false when the same answer and note were already stored: nothing was written")


class HumanAnswerUndone(Body):
    """The human answer removed, and the one current again."""

    removed: HumanAnswer
    restored: HumanAnswer | None = Field(description=(
        "the human answer the removed one had replaced, current again; null: none now"))


class HumanAnswerPage(Body):
    """A page of human answers, by classifier, then domain."""

    answers: list[HumanAnswer]
    next: str | None = Field(description="pass as ?after= for the next page; null on the last")




class AnswersForgotten(Body):
    """How many cached answers were forgotten; the next job about those domains asks again."""

    forgotten: int = Field(ge=0)

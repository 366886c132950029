"""The request bodies: POST /domains/classify, POST /batches (a JSON list), PUT /answers/{classifier}/{domain}
and POST /answers/forget."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import ConfigDict, Field, StrictBool, StrictStr, WithJsonSchema

from firmsift.domain.economy import BatchMode
from firmsift.domain.human_answers import MAX_NOTE_CHARS
from firmsift.entrypoints.http.contract.body import Body, configured, optional

# Any value is taken here and the services decide: an unknown name (or a non-string) is a 422
# unknown_classifier that names the known ones, which a schema error could not.
ClassifierName = Annotated[Any, WithJsonSchema({"type": "string", **configured("", enum="classifiers")})]
# Each entry is normalized by the domain's rule (domain/normalize.py), stricter than any schema can
# say (not an IP, not `localhost`, not `a..b`): every refused one is listed with its reason in one
# 422, a non-string too. What a schema can say, a valid entry is a non-empty string, it says.
DomainEntry = Annotated[Any, WithJsonSchema({"type": "string", "minLength": 1})]


class SubmitRequest(Body):
    """POST /domains/classify: the domains to classify and the classifier asked."""

    reasons: ClassVar[dict[str, str]] = {"domains": "must be a non-empty list of domain names"}

    classifier: ClassifierName = "cpg"
    # maxItems is stated, not checked here: more entries than that are a 413 too_many_domains (services/submit.py).
    domains: list[DomainEntry] = Field(min_length=1, json_schema_extra=configured(
        "host names or URLs; normalized, duplicates removed; at most {max_domains} unique ones and {max_entries} "
        "entries (413 too_many_domains); each invalid one is listed in a 422 invalid_domains error",
        maxItems="max_entries"))


class BatchRequest(Body):
    """POST /batches as JSON: one row per entry of `domains`."""

    # Only the fields are checked here (pydantic copies the list, a few ms for 100,000 entries):
    # the entries are read one at a time as rows, never turned into an object each.
    reasons: ClassVar[dict[str, str]] = {"domains": "must be a non-empty list",
                                         "mode": f"must be one of {', '.join(m.value for m in BatchMode)}"}

    classifier: ClassifierName = "cpg"
    # A value that is not a valid domain is a rejected row, listed in the answer: any value will do.
    domains: list[Any] = Field(min_length=1, json_schema_extra=configured(
        "host names or URLs, one per row; normalized and de-duplicated, at most {max_batch_domains} unique "
        "ones (413 too_many_domains); a value that is not a valid domain is a rejected row, listed in the answer"))
    # Left out: the ?mode= query parameter's (default standard). An explicit null is refused.
    mode: Literal[tuple(m.value for m in BatchMode)] = optional(  # type: ignore[valid-type]
        "economy: domains that need the LLM are asked through the provider's batch API, at half the price, "
        "answered within 24 hours; when left out, the ?mode= query parameter's (default standard)")


class HumanAnswerRequest(Body):
    """PUT /answers/{classifier}/{domain}: the answer a person gives, and why."""

    reasons: ClassVar[dict[str, str]] = {"answer": "answer must be true or false",
                                         "note": "note is required: say why the answer is corrected"}

    answer: StrictBool
    # Stated, and checked by domain/human_answers.py after trimming (listing the domain's problem too).
    note: StrictStr = Field(json_schema_extra={"minLength": 1, "maxLength": MAX_NOTE_CHARS, "pattern": r"\S",
                                               "description": "why the answer is corrected (trimmed)"})


class ForgetRequest(Body):
    """POST /answers/forget: which cached answers to forget (exactly one of domains, batch_id, all)."""

    model_config = ConfigDict(**Body.model_config, json_schema_extra={"oneOf": [
        {"required": ["domains"]}, {"required": ["batch_id"]},
        {"required": ["all"], "properties": {"all": {"const": True}}}]})

    reasons: ClassVar[dict[str, str]] = {"domains": "must be a list of domain names",
                                         "batch_id": "must be a batch id", "all": "must be true or false",
                                         "only": "must be one of all, precheck"}

    classifier: ClassifierName = Field("cpg", description="whose answers; with batch_id, the batch's own")
    # Left out, not null: an explicit null is refused (the schema's oneOf counts a key that is there).
    domains: list[DomainEntry] = optional(
        "forget these domains' answers (normalized; each invalid one is listed in a 422 invalid_domains error)",
        min_length=1, max_length=1000)
    batch_id: StrictStr = optional("forget the answers of every domain of this batch (one of yours)")
    all: StrictBool = Field(False, description="forget every cached answer of the classifier")
    only: Literal["all", "precheck"] = Field(
        "all", description="precheck: only the pre-check's outcomes (no_dns, unreachable, parked), not the LLM's answers")

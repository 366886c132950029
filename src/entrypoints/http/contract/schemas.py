"""The document's components/schemas, generated from the body models and completed with the app's settings."""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from typing import Any

from pydantic.json_schema import GenerateJsonSchema, models_json_schema

from firmsift.entrypoints.http.contract.answers import (
    AnswersForgotten,
    HumanAnswerPage,
    HumanAnswerSet,
    HumanAnswerUndone,
)
from firmsift.entrypoints.http.contract.batches import BatchAccepted, BatchCancelled, BatchProgress, BatchRetried
from firmsift.entrypoints.http.contract.body import CONFIGURED, Body
from firmsift.entrypoints.http.contract.error_body import Error
from firmsift.entrypoints.http.contract.estimate import BatchEstimate
from firmsift.entrypoints.http.contract.jobs import Accepted, Health, Job, Readiness
from firmsift.entrypoints.http.contract.requests import BatchRequest, ForgetRequest, HumanAnswerRequest, SubmitRequest

# Every body the API reads or writes as JSON; the models they hold (Result, JobTotal, ...) come along.
BODIES: tuple[type[Body], ...] = (
    SubmitRequest, Accepted, Job, Health, Readiness, Error,
    BatchRequest, BatchAccepted, BatchEstimate, BatchProgress, BatchCancelled, BatchRetried,
    HumanAnswerRequest, HumanAnswerSet, HumanAnswerUndone, HumanAnswerPage, ForgetRequest, AnswersForgotten,
)
REF_TEMPLATE = "#/components/schemas/{model}"


class _Untitled(GenerateJsonSchema):
    """Schemas without pydantic's generated titles ("Job Id" for job_id): names say it already."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


@functools.cache
def model_schemas() -> dict[str, dict[str, Any]]:
    """Each body model's schema by its name, referring to the others as components; settings not
    applied (each schema that needs one names it under CONFIGURED)."""
    _refs, top = models_json_schema([(model, "validation") for model in BODIES], ref_template=REF_TEMPLATE,
                                    schema_generator=_Untitled)
    schemas = top["$defs"]
    for schema in schemas.values():
        schema.pop("title", None)  # a model's title is its component's name
    return schemas


def component_schemas(settings: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The schemas with the app's settings applied: `settings` holds a value for each name a
    schema asks for (classifiers, max_domains, max_entries, max_batch_domains)."""
    schemas = copy.deepcopy(model_schemas())
    _complete(schemas, settings)
    return schemas


def _complete(node: object, settings: Mapping[str, Any]) -> None:
    if isinstance(node, dict):
        wanted = node.pop(CONFIGURED, None)
        if wanted is not None:
            node.update({keyword: settings[name] for keyword, name in wanted.items()})
            if "description" in node:
                node["description"] = node["description"].format_map(settings)
        for value in node.values():
            _complete(value, settings)
    elif isinstance(node, list):
        for value in node:
            _complete(value, settings)

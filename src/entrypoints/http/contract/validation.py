"""Checking a parsed JSON body against its model: the contract's 422 invalid_request, each refused value listed."""

from __future__ import annotations

from typing import TypeVar

from pydantic import ValidationError

from firmsift.domain.errors import InvalidRequest, Rejection
from firmsift.entrypoints.http.contract.body import Body

BodyModel = TypeVar("BodyModel", bound=Body)
_NOT_AN_OBJECT = frozenset({"model_type", "model_attributes_type", "dict_type"})


def validated(model: type[BodyModel], document: object) -> BodyModel:
    """`document` (a parsed JSON body) as `model`, or InvalidRequest: a body that is no object, then
    unknown fields, then each field refused (missing, of the wrong type, out of bounds) with why."""
    try:
        return model.model_validate(document)
    except ValidationError as error:
        raise refusal(model, document, error) from None


def refusal(model: type[Body], document: object, error: ValidationError) -> InvalidRequest:
    problems = error.errors(include_url=False, include_context=False)
    if any(not problem["loc"] and problem["type"] in _NOT_AN_OBJECT for problem in problems):
        return InvalidRequest("body must be a JSON object", (Rejection(json_kind(document), "expected an object"),))
    unknown = sorted(str(problem["loc"][0]) for problem in problems if problem["type"] == "extra_forbidden")
    if unknown:
        fields = ", ".join(model.model_fields)
        return InvalidRequest("unknown fields in body", tuple(Rejection(name, f"not a field; use {fields}")
                                                              for name in unknown))
    reasons = getattr(model, "reasons", {})
    rejections = []
    for problem in problems:
        field = str(problem["loc"][0])
        missing = problem["type"] == "missing"
        rejections.append(Rejection(field if missing else problem["input"],
                                    reasons.get(field) or ("missing" if missing else problem["msg"])))
    first = problems[0]
    field = str(first["loc"][0])
    message = f"'{field}' is required" if first["type"] == "missing" else f"invalid '{field}'"
    return InvalidRequest(message, tuple(rejections))


def json_kind(value: object) -> str:
    """What JSON calls the type of a parsed value."""
    kinds = {dict: "object", list: "array", str: "string", int: "number", float: "number", bool: "boolean"}
    return kinds.get(type(value), "null")

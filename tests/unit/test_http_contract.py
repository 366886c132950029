"""The HTTP contract's models: /openapi.json's body schemas are theirs, and their refusals say what and why."""

from __future__ import annotations

from typing import Any

import pytest

from firmsift.domain.errors import InvalidRequest
from firmsift.entrypoints.http.contract.body import CONFIGURED
from firmsift.entrypoints.http.contract.requests import BatchRequest, HumanAnswerRequest, SubmitRequest
from firmsift.entrypoints.http.contract.schemas import BODIES, REF_TEMPLATE, _Untitled
from firmsift.entrypoints.http.contract.validation import validated
from firmsift.entrypoints.http.openapi import openapi_document

SETTINGS = {"classifiers": ["cpg", "food"], "max_domains": 7, "max_entries": 70, "max_batch_domains": 900}


def document(auth_required: bool = True) -> dict[str, Any]:
    return openapi_document(auth_required=auth_required, classifiers=["food", "cpg"], max_domains=7,
                            max_body_bytes=2048, max_header_bytes=8192, max_batch_domains=900,
                            max_batch_body_bytes=10**6)


def own_schema(model: type) -> dict[str, Any]:
    """The model's schema on its own (not generated with the others), as a component reads it."""
    schema = model.model_json_schema(ref_template=REF_TEMPLATE, schema_generator=_Untitled)
    schema.pop("$defs", None)
    schema.pop("title")
    return schema


def completed(node: object) -> object:
    """`node` with SETTINGS filled in where a schema names a setting (CONFIGURED)."""
    if isinstance(node, list):
        return [completed(value) for value in node]
    if not isinstance(node, dict):
        return node
    wanted = node.get(CONFIGURED, {})
    done = {key: completed(value) for key, value in node.items() if key != CONFIGURED}
    done.update({keyword: SETTINGS[name] for keyword, name in wanted.items()})
    if CONFIGURED in node and "description" in done:
        done["description"] = done["description"].format_map(SETTINGS)
    return done


def body_schemas(paths: dict[str, Any]) -> list[dict[str, Any]]:
    """Every JSON body schema of every operation: the request's and each response's."""
    found = []
    for operation in (op for item in paths.values() for op in item.values()):
        contents = [operation.get("requestBody", {}).get("content", {}),
                    *(response.get("content", {}) for response in operation["responses"].values())]
        found += [content["application/json"]["schema"] for content in contents if "application/json" in content]
    return found


@pytest.mark.parametrize("auth_required", [True, False])
def test_every_json_body_of_the_document_is_a_models_schema(auth_required: bool) -> None:
    described = document(auth_required)
    components = described["components"]["schemas"]
    referred = {schema["$ref"].removeprefix("#/components/schemas/") for schema in body_schemas(described["paths"])
                if schema != {"type": "object"}}  # /openapi.json's own answer: this document, no model
    assert referred == {model.__name__ for model in BODIES}
    models = {model.__name__: model for model in BODIES}
    waiting = list(BODIES)
    while waiting:  # and each model they hold (Result, Evidence, JobTotal, ...), found through the references
        model = waiting.pop()
        for name in _references(own_schema(model)) - set(models):
            models[name] = _held(model, name)
            waiting.append(models[name])
    assert set(components) == set(models)
    for name, model in models.items():
        assert components[name] == completed(own_schema(model)), name


def _references(node: object) -> set[str]:
    if isinstance(node, dict):
        own = {node["$ref"].removeprefix("#/components/schemas/")} if "$ref" in node else set()
        return own.union(*(_references(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(_references(value) for value in node))
    return set()


def _held(model: type, name: str) -> type:
    """The model named `name` that `model` holds, at any depth."""
    for field in model.model_fields.values():
        for candidate in _models_in(field.annotation):
            if candidate.__name__ == name:
                return candidate
            try:
                return _held(candidate, name)
            except LookupError:
                pass
    raise LookupError(name)


def _models_in(annotation: object) -> list[type]:
    if isinstance(annotation, type) and hasattr(annotation, "model_fields"):
        return [annotation]
    return [model for argument in getattr(annotation, "__args__", ()) for model in _models_in(argument)]


def test_the_settings_complete_the_schemas_that_name_them() -> None:
    components = document()["components"]["schemas"]
    assert CONFIGURED not in repr(components)
    submit = components["SubmitRequest"]["properties"]
    assert submit["classifier"] == {"type": "string", "enum": ["cpg", "food"], "default": "cpg"}
    assert submit["domains"]["maxItems"] == 70 and "at most 7 unique ones and 70 entries" in submit["domains"]["description"]
    assert "at most 900 unique" in components["BatchRequest"]["properties"]["domains"]["description"]
    assert components["HumanAnswer"]["properties"]["classifier"]["enum"] == ["cpg", "food"]


def refused(model: type, body: object) -> InvalidRequest:
    with pytest.raises(InvalidRequest) as caught:
        validated(model, body)
    assert caught.value.code == "invalid_request"
    return caught.value


@pytest.mark.parametrize(("body", "kind"), [([], "array"), ("a.com", "string"), (None, "null"), (7, "number")])
def test_a_body_that_is_no_object_is_refused_saying_what_it_is(body: object, kind: str) -> None:
    error = refused(SubmitRequest, body)
    assert error.message == "body must be a JSON object"
    assert [(r.value, r.reason) for r in error.rejections] == [(kind, "expected an object")]


def test_unknown_fields_are_listed_with_the_fields_there_are() -> None:
    error = refused(BatchRequest, {"domains": ["a.com"], "domain": "x", "by": None, "mode": None})
    assert error.message == "unknown fields in body"
    assert [(r.value, r.reason) for r in error.rejections] == [
        ("by", "not a field; use classifier, domains, mode"), ("domain", "not a field; use classifier, domains, mode")]


@pytest.mark.parametrize(("body", "message", "value"), [
    ({}, "'domains' is required", "domains"),
    ({"domains": []}, "invalid 'domains'", []),
    ({"domains": "a.com"}, "invalid 'domains'", "a.com"),
    ({"domains": None}, "invalid 'domains'", None),
])
def test_a_bad_domains_field_is_refused_with_why(body: dict[str, Any], message: str, value: object) -> None:
    error = refused(SubmitRequest, body)
    assert error.message == message
    assert [(r.value, r.reason) for r in error.rejections] == [(value, "must be a non-empty list of domain names")]


@pytest.mark.parametrize("mode", [None, 1, ["economy"], "cheap"])
def test_a_batch_mode_is_standard_or_economy_never_null(mode: object) -> None:
    error = refused(BatchRequest, {"domains": ["a.com"], "mode": mode})
    assert error.message == "invalid 'mode'"
    assert [(r.value, r.reason) for r in error.rejections] == [(mode, "must be one of standard, economy")]


@pytest.mark.parametrize(("body", "reasons"), [
    ({"answer": True}, [("note", "note is required: say why the answer is corrected")]),
    ({"answer": "yes", "note": 5}, [("yes", "answer must be true or false"),
                                    (5, "note is required: say why the answer is corrected")]),
])
def test_a_human_answer_says_what_is_wrong_with_each_field(body: dict[str, Any], reasons: list[tuple]) -> None:
    assert [(r.value, r.reason) for r in refused(HumanAnswerRequest, body).rejections] == reasons


def test_values_the_domain_rules_judge_pass_through_unchanged() -> None:
    # Classifier names and each domain are the services' to refuse, with reasons a schema cannot give.
    submitted = validated(SubmitRequest, {"classifier": 7, "domains": ["", 5, "a.com"]})
    assert (submitted.classifier, submitted.domains) == (7, ["", 5, "a.com"])
    batch = validated(BatchRequest, {"domains": [{"x": 1}]})
    assert (batch.classifier, batch.domains, batch.mode) == ("cpg", [{"x": 1}], None)

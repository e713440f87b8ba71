"""Form schemas (the served subset) and answer checking, table-driven."""

from __future__ import annotations

from typing import Any, Optional

import pytest

from mcp_input_sync._protocol.forms import FormCache, SchemaRefused, compile_form


def form(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


SDK_STYLE = {  # what servers on the official Python SDK send: a top-level title
    "title": "Profile",
    "type": "object",
    "properties": {"name": {"title": "Name", "type": "string"}, "age": {"title": "Age", "type": "integer", "default": 30}},
    "required": ["name"],
}

SERVED = [
    ("sdk style with titles", SDK_STYLE),
    ("string formats", form(e={"type": "string", "format": "email"}, u={"type": "string", "format": "uri"}, d={"type": "string", "format": "date"}, t={"type": "string", "format": "date-time"})),
    ("unknown format tolerated", form(h={"type": "string", "format": "hostname"})),
    ("number bounds", form(n={"type": "number", "minimum": 0.5, "maximum": 9.5}, i={"type": "integer", "minimum": 1})),
    ("boolean default", form(b={"type": "boolean", "default": True})),
    ("enum", form(c={"type": "string", "enum": ["a", "b"]})),
    ("legacy enumNames", form(c={"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"]})),
    ("titled oneOf", form(c={"type": "string", "oneOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]})),
    ("multi-select enum", form(m={"type": "array", "items": {"type": "string", "enum": ["x", "y"]}, "minItems": 1})),
    ("multi-select anyOf", form(m={"type": "array", "items": {"anyOf": [{"const": "x", "title": "X"}]}})),
    ("annotations anywhere", {"$schema": "https://json-schema.org/draft/2020-12/schema", "$comment": "c", "type": "object", "properties": {"a": {"type": "string", "examples": ["q"], "deprecated": True, "readOnly": False, "writeOnly": False, "description": "d"}}}),
    ("additionalProperties false", {"type": "object", "properties": {}, "additionalProperties": False}),
    ("pattern", form(p={"type": "string", "pattern": "^[a-z]+$"})),
    ("unknown keyword tolerated", form(p={"type": "string", "x-widget": {"$ref": "not a schema position"}})),
    ("a field named like a keyword", form(**{"if": {"type": "string"}, "not": {"type": "boolean"}})),
    ("empty form", form()),
]

REFUSED = [
    ("not an object", [], "not an object"),
    ("wrong top type", {"type": "array", "properties": {}}, "type"),
    ("no properties", {"type": "object"}, "properties"),
    ("nested object", form(o={"type": "object", "properties": {}}), "nested object"),
    ("array of objects", form(a={"type": "array", "items": {"type": "object"}}), "array of objects"),
    ("$ref", form(a={"$ref": "#/$defs/A"}), "$ref"),
    ("$defs top level", {"type": "object", "properties": {}, "$defs": {"A": {"type": "string"}}}, "$defs"),
    ("definitions", {"type": "object", "properties": {}, "definitions": {}}, "definitions"),
    ("allOf", form(a={"type": "string", "allOf": [{"minLength": 1}]}), "allOf"),
    ("not", form(a={"type": "string", "not": {"enum": ["x"]}}), "not"),
    ("if then else", form(a={"type": "string", "if": {}, "then": {}, "else": {}}), "if"),
    ("patternProperties", {"type": "object", "properties": {}, "patternProperties": {"^x": {"type": "string"}}}, "patternProperties"),
    ("dependentSchemas", {"type": "object", "properties": {}, "dependentSchemas": {}}, "dependentSchemas"),
    ("pydantic Optional anyOf", form(a={"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}), "primitive type"),
    ("anyOf on a string", form(a={"type": "string", "anyOf": [{"const": "x"}]}), "anyOf"),
    ("oneOf without const", form(a={"type": "string", "oneOf": [{"type": "string"}]}), "oneOf"),
    ("type list", form(a={"type": ["string", "null"]}), "type list"),
    ("no type", form(a={"enum": ["x"]}), "primitive type"),
    ("null type", form(a={"type": "null"}), "primitive type"),
    ("array without enum", form(a={"type": "array", "items": {"type": "string"}}), "multi-select"),
    ("schema-valued additionalProperties", {"type": "object", "properties": {}, "additionalProperties": {"type": "string"}}, "additionalProperties"),
    ("required names a ghost", {"type": "object", "properties": {}, "required": ["ghost"]}, "ghost"),
    ("required not a list", {"type": "object", "properties": {}, "required": "a"}, "required"),
    ("property not an object", form(a="string"), "not an object"),
    ("top-level oneOf", {"type": "object", "properties": {}, "oneOf": []}, "oneOf"),
    ("pydantic nested model", {"type": "object", "properties": {"addr": {"$ref": "#/$defs/Addr"}}, "$defs": {"Addr": {"type": "object"}}}, "$"),
]


@pytest.mark.parametrize("name, schema", SERVED, ids=[c[0] for c in SERVED])
def test_forms_in_the_subset_are_served(name: str, schema: Any) -> None:
    compile_form(schema)


@pytest.mark.parametrize("name, schema, why", REFUSED, ids=[c[0] for c in REFUSED])
def test_forms_outside_the_subset_are_refused(name: str, schema: Any, why: str) -> None:
    with pytest.raises(SchemaRefused) as info:
        compile_form(schema)
    assert why in str(info.value)


FULL = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2, "maxLength": 5},
        "email": {"type": "string", "format": "email"},
        "day": {"type": "string", "format": "date"},
        "when": {"type": "string", "format": "date-time"},
        "site": {"type": "string", "format": "uri"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "score": {"type": "number", "maximum": 100},
        "ok": {"type": "boolean"},
        "colour": {"type": "string", "enum": ["red", "green"]},
        "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "m", "title": "Medium"}]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}, "maxItems": 2},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "ecma": {"type": "string", "pattern": "\\p{L}+(?<"},
    },
    "required": ["name"],
}

ANSWERS: list[tuple[str, Any, Optional[str]]] = [
    ("minimal", {"name": "Ada"}, None),
    ("everything", {"name": "Ada", "email": "a@b.co", "day": "2026-02-28", "when": "2026-02-28T10:00:00Z", "site": "https://x.y/z", "age": 36, "score": 95.5, "ok": True, "colour": "red", "size": "m", "tags": ["a", "c"], "code": "ABC", "ecma": "anything"}, None),
    ("integer as whole float", {"name": "Ada", "age": 30.0}, None),
    ("no content", None, "required field 'name' is missing"),
    ("content not a dict", ["Ada"], "not an object"),
    ("missing required", {"age": 3}, "required field 'name' is missing"),
    ("too short", {"name": "A"}, "shorter"),
    ("too long", {"name": "Adaline"}, "longer"),
    ("wrong type", {"name": 5}, "must be a string"),
    ("bad email", {"name": "Ada", "email": "ada"}, "email"),
    ("bad date", {"name": "Ada", "day": "2026-02-30"}, "date"),
    ("bad date-time", {"name": "Ada", "when": "2026-02-28 25:00:00Z"}, "date-time"),
    ("bad uri", {"name": "Ada", "site": "not a uri"}, "uri"),
    ("bool is not an integer", {"name": "Ada", "age": True}, "integer"),
    ("fractional integer", {"name": "Ada", "age": 3.5}, "integer"),
    ("below minimum", {"name": "Ada", "age": -1}, "minimum"),
    ("above maximum", {"name": "Ada", "score": 100.5}, "maximum"),
    ("nan", {"name": "Ada", "score": float("nan")}, "number"),
    ("not in enum", {"name": "Ada", "colour": "blue"}, "allowed"),
    ("not a oneOf const", {"name": "Ada", "size": "Small"}, "allowed"),
    ("multi-select outside", {"name": "Ada", "tags": ["z"]}, "choices"),
    ("multi-select too many", {"name": "Ada", "tags": ["a", "b", "c"]}, "more than 2"),
    ("pattern mismatch", {"name": "Ada", "code": "abc"}, "pattern"),
    ("extra primitive field allowed", {"name": "Ada", "extra": "x"}, None),
    ("extra object field refused", {"name": "Ada", "extra": {"x": 1}}, "extra"),
]


@pytest.mark.parametrize("name, content, problem", ANSWERS, ids=[c[0] for c in ANSWERS])
def test_accepted_content_is_checked_against_the_form(name: str, content: Any, problem: Optional[str]) -> None:
    found = compile_form(FULL).check_content(content)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


def test_a_closed_form_refuses_unknown_fields() -> None:
    closed = compile_form({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False})
    assert closed.check_content({"a": "x"}) is None
    assert "not in the form" in (closed.check_content({"a": "x", "b": "y"}) or "")


def test_compiled_forms_are_cached_by_their_json() -> None:
    cache = FormCache(size=2)
    first = cache.get(form(a={"type": "string"}))
    assert cache.get(form(a={"type": "string"})) is first
    cache.get(form(b={"type": "string"}))
    cache.get(form(c={"type": "string"}))  # over size: starts over
    assert cache.get(form(a={"type": "string"})) is not first
    with pytest.raises(SchemaRefused):
        cache.get(form(a={"type": "number", "default": float("nan")}))


def test_the_cache_keeps_apart_schemas_that_only_compare_equal() -> None:
    # True == 1 and key order is ignored by ==: the cache key must see both
    cache = FormCache()
    one = cache.get(form(a={"type": "string", "maxLength": 1}))
    assert cache.get(form(a={"type": "string", "maxLength": True})) is not one
    ab = cache.get(form(a={"type": "string"}, b={"type": "string"}))
    ba = cache.get(form(b={"type": "string"}, a={"type": "string"}))
    assert ab is not ba and list(ba.fields) == ["b", "a"]
    with pytest.raises(SchemaRefused):
        cache.get(form(a={"type": "string", "default": object()}))


def test_a_schema_built_in_python_with_str_subclasses_is_still_cached() -> None:
    # marshal refuses subclasses (an enum.StrEnum member, say): the key falls back to JSON text
    class Name(str):
        pass

    cache = FormCache()
    first = cache.get(form(a={"type": Name("string")}))
    assert cache.get(form(a={"type": Name("string")})) is first
    assert first.check_content({"a": "x"}) is None


def test_a_deeply_nested_hostile_schema_is_refused_without_recursion_errors() -> None:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(10_000):
        node = {"type": "array", "items": node}
    with pytest.raises(SchemaRefused):
        compile_form(form(deep=node))

"""The pure reading of a form schema and of content blocks for display, shared by the terminal and the web forms."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_input_sync._protocol.formview import Block, Choices, Field, blocks, choices, fields
from mcp_input_sync._protocol.forms import compile_form

JsonDict = dict[str, Any]


@pytest.mark.parametrize(
    "prop, expected",
    [
        (
            {"type": "string", "oneOf": [{"const": "free", "title": "Free"}, {"const": "pro"}]},
            Choices((("free", "Free"), ("pro", "pro")), False, "oneOf"),
        ),
        ({"type": "string", "enum": ["s", "m"]}, Choices((("s", "s"), ("m", "m")), False, "enum")),
        ({"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"]}, Choices((("s", "Small"), ("m", "Medium")), False, "enum")),
        ({"type": "string", "enum": ["s", "m"], "enumNames": ["Small"]}, Choices((("s", "s"), ("m", "m")), False, "enum")),
        # both: the choices and their titles come from oneOf (the check allows those also in enum)
        ({"type": "string", "enum": ["a"], "oneOf": [{"const": "a", "title": "A"}]}, Choices((("a", "A"),), False, "oneOf")),
        (
            {"type": "array", "items": {"anyOf": [{"const": "mon", "title": "Monday"}, {"const": "tue", "title": "Tuesday"}]}},
            Choices((("mon", "Monday"), ("tue", "Tuesday")), True, "anyOf"),
        ),
        ({"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}, Choices((("a", "a"), ("b", "b")), True, "enum")),
        # legacy enumNames titles a single-select only
        ({"type": "array", "items": {"type": "string", "enum": ["a"]}, "enumNames": ["A"]}, Choices((("a", "a"),), True, "enum")),
        ({"type": "string"}, None),
        ({"type": "integer", "enum": [1, 2]}, None),
        ({"type": "boolean"}, None),
        ({"type": "array"}, None),
        ({"type": "array", "items": {"type": "string"}}, None),
        ({}, None),
    ],
)
def test_the_choices_of_a_field(prop: JsonDict, expected: Choices) -> None:
    assert choices(prop) == expected


def test_choices_without_a_string_const_are_left_out() -> None:
    # never in a compiled form; a page built from anything else still gets text values only
    prop = {"type": "string", "oneOf": [{"const": 5, "title": "five"}, "junk", {"const": "a", "title": 7}]}
    assert choices(prop) == Choices((("a", "7"),), False, "oneOf")


def test_the_fields_of_a_schema_in_order() -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "odd": "not a schema", "plan": {"type": "string", "enum": ["a"]}},
        "required": ["plan", 7],
    }
    found = fields(schema)
    assert [(f.name, f.required, f.index) for f in found] == [("name", False, 0), ("plan", True, 2)]
    assert found[1].prop is schema["properties"]["plan"]  # type: ignore[index]
    assert found[1].choices == Choices((("a", "a"),), False, "enum") and found[0].choices is None


@pytest.mark.parametrize(
    "schema, expected",
    [
        (None, []),
        ([], []),
        ({}, []),
        ({"properties": []}, []),
        ({"properties": {"a": {"type": "string"}}, "required": "a"}, [Field("a", {"type": "string"}, False, 0)]),
    ],
)
def test_a_schema_without_usable_parts_reads_as_far_as_it_goes(schema: Any, expected: list[Field]) -> None:
    assert fields(schema) == expected


def test_every_field_of_a_compiled_form_is_read() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "array", "items": {"anyOf": [{"const": "x"}]}}, "c": {"type": "boolean"}},
        "required": ["b"],
    }
    compile_form(schema)
    assert [(f.name, f.required) for f in fields(schema)] == [("a", False), ("b", True), ("c", False)]


@pytest.mark.parametrize(
    "content, expected",
    [
        ({"type": "text", "text": "hi"}, [Block("text", "hi")]),
        ([{"type": "text", "text": "a"}, {"type": "image", "data": "..."}], [Block("text", "a"), Block("image", None)]),
        ([{"type": "text"}, {"type": "text", "text": 5}], [Block("text", None), Block("text", None)]),
        ([{"no": "type"}, {"type": 5}], [Block(None, None), Block("5", None)]),
        (["text", None, 3], []),
        ("plain", []),
        (None, []),
    ],
)
def test_content_blocks_to_show(content: Any, expected: list[Block]) -> None:
    assert blocks(content) == expected

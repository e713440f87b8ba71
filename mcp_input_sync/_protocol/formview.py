"""A form's ``requestedSchema`` and a sampling request's content, read for display.

The terminal handler and the web forms show the same things in their own
medium: a form's fields, the choices of a single- or multi-select, and the
text of a message's content blocks. This module reads them once. It
neither cleans nor escapes anything (each front end does that for its
medium: everything here came from the server) and it checks nothing: the
schema was compiled by :func:`~mcp_input_sync._protocol.forms.compile_form`
first, and every answer is checked by the compiled form.

Choices follow the served subset: a single-select is a string with
``oneOf`` of ``{const, title}``, or an ``enum`` (titled by a legacy
``enumNames`` list of the same length); a multi-select is an array whose
``items`` hold ``anyOf`` of ``{const, title}``, or an ``enum``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional

__all__ = ["Block", "Choices", "Field", "blocks", "choices", "fields"]


@dataclass(frozen=True)
class Choices:
    """The choices of a single- or multi-select field."""

    #: ``(value, title)`` of each choice, in the schema's order (the title is the value when none is given).
    options: tuple[tuple[str, str], ...]
    #: True for a multi-select (an array), False for a single-select (a string).
    multiple: bool
    #: The keyword they come from: ``"oneOf"``, ``"anyOf"`` (each choice with its own title) or ``"enum"``.
    source: str


@dataclass(frozen=True)
class Field:
    """One property of a form."""

    name: str
    #: The property's schema (``type``, ``title``, ``default``...).
    prop: Mapping[str, Any]
    required: bool
    #: The property's position among the schema's ``properties``.
    index: int

    @property
    def choices(self) -> Optional[Choices]:
        """The field's choices (see :func:`choices`)."""
        return choices(self.prop)


@dataclass(frozen=True)
class Block:
    """One content block of a message, as shown."""

    #: The block's ``type`` (``"text"``, ``"image"``...) as text; None when it has none.
    type: Optional[str]
    #: The text of a text block; None for every other block (shown by its type).
    text: Optional[str]


_ABSENT = object()


def _titled(entries: list[Any]) -> tuple[tuple[str, str], ...]:
    return tuple((e["const"], str(e.get("title", e["const"]))) for e in entries if isinstance(e, dict) and isinstance(e.get("const"), str))


def choices(prop: Mapping[str, Any]) -> Optional[Choices]:
    """The choices of a select field, or None for a field of any other kind."""
    kind = prop.get("type")
    if kind == "string":
        one_of = prop.get("oneOf")
        if isinstance(one_of, list):
            return Choices(_titled(one_of), False, "oneOf")
        enum = prop.get("enum")
        if not isinstance(enum, list):
            return None
        names = prop.get("enumNames")
        if isinstance(names, list) and len(names) == len(enum):
            return Choices(tuple((str(v), str(n)) for v, n in zip(enum, names)), False, "enum")
        return Choices(tuple((str(v), str(v)) for v in enum), False, "enum")
    if kind == "array":
        items = prop.get("items")
        if not isinstance(items, dict):
            return None
        any_of = items.get("anyOf")
        if isinstance(any_of, list):
            return Choices(_titled(any_of), True, "anyOf")
        enum = items.get("enum")
        if isinstance(enum, list):
            return Choices(tuple((str(v), str(v)) for v in enum), True, "enum")
    return None


def fields(schema: Any) -> list[Field]:
    """The fields of a ``requestedSchema``, in order (properties that are not objects left out)."""
    if not isinstance(schema, Mapping):
        return []
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return []
    listed = schema.get("required")
    required = {name for name in listed if isinstance(name, str)} if isinstance(listed, list) else set()
    return [Field(name, prop, name in required, index) for index, (name, prop) in enumerate(props.items()) if isinstance(prop, dict)]


def blocks(content: Any) -> list[Block]:
    """A message's ``content`` (one block or a list of them) as blocks to show; entries that are not objects are left out."""
    found = []
    for block in content if isinstance(content, list) else [content]:
        if not isinstance(block, dict):
            continue
        kind = block.get("type", _ABSENT)
        text = block.get("text")
        shown = None if kind is _ABSENT else kind if isinstance(kind, str) else str(kind)
        found.append(Block(shown, text if kind == "text" and isinstance(text, str) else None))
    return found

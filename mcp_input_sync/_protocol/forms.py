"""Form elicitation: which ``requestedSchema`` a client serves, and checking answers against it.

The client serves the spec's flat form subset (docs/safety.md#forms): a
top-level ``{"type": "object", "properties": {...}, "required": [...]}``
whose properties are primitives:

- string (``minLength``, ``maxLength``, ``format`` email / uri / date /
  date-time, ``pattern``), number or integer (``minimum``, ``maximum``),
  boolean;
- single-select: string with ``enum`` (optionally the legacy ``enumNames``)
  or ``oneOf`` of ``{"const", "title"}``;
- multi-select: array (``minItems``, ``maxItems``) whose ``items`` are a
  string ``enum`` or ``anyOf`` of ``{"const", "title"}``.

Refused (the server gets -32602): nested object properties, arrays of
objects, ``$ref`` / ``$defs`` / ``definitions``, ``allOf``, ``not``,
``if`` / ``then`` / ``else``, ``patternProperties``, ``dependentSchemas``,
any other ``oneOf`` / ``anyOf``, ``type`` lists, a property without a
primitive ``type``, a schema-valued ``additionalProperties``, a
``required`` entry that names no property, and a number or integer property
whose ``minimum``, ``maximum`` or ``default`` is not a finite number.
Field names are quoted in the messages with :func:`quoted` (ASCII only).

Tolerated and passed on unchanged: annotations (``title``, ``description``,
``$schema``, ``$comment``, ``examples``, ``deprecated``, ``readOnly``,
``writeOnly``) at any level, a boolean top-level ``additionalProperties``,
``default`` (in any version), and every other keyword, which is not
enforced. ``pattern`` is enforced (as an unanchored search) when it
compiles as a Python regular expression and ignored otherwise.

:func:`compile_form` checks a schema once and returns a :class:`FormSchema`
whose :meth:`~FormSchema.check_content` validates an accepted answer:
required fields, types, enums, bounds, formats, patterns, and
``additionalProperties: false``.
"""

from __future__ import annotations

import math
import re
from marshal import dumps as _marshal
from typing import Any, Callable, Mapping, Optional

from .fields import sensitive_fields
from .jsonrpc import dumps

#: Keywords refused at any level of a form schema.
REFUSED_KEYWORDS = frozenset(
    {"$ref", "$defs", "definitions", "allOf", "not", "if", "then", "else", "patternProperties", "dependentSchemas"}
)
PRIMITIVE_TYPES = frozenset({"string", "number", "integer", "boolean", "array"})
#: Keywords of a number or integer property that must hold a finite number when present.
_NUMERIC_KEYWORDS = ("minimum", "maximum", "default")
FORMATS = ("email", "uri", "date", "date-time")

Check = Callable[[Any], Optional[str]]


class SchemaRefused(ValueError):
    """The schema is outside the served subset; the message says why (sent as -32602)."""


_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+\Z")
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:[^\s]+\Z")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}\Z")
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})\Z")


def _valid_date(text: str) -> bool:
    import datetime  # lazy: only date fields need it

    try:
        datetime.date.fromisoformat(text[:10])
    except ValueError:
        return False
    return True


def _format_ok(fmt: str, value: str) -> bool:
    if fmt == "email":
        return _EMAIL.match(value) is not None
    if fmt == "uri":
        return _URI.match(value) is not None
    if fmt == "date":
        return _DATE.match(value) is not None and _valid_date(value)
    if fmt == "date-time":
        if _DATE_TIME.match(value) is None or not _valid_date(value):
            return False
        hour, minute, second = int(value[11:13]), int(value[14:16]), int(value[17:19])
        return hour < 24 and minute < 60 and second < 61
    return True  # an unknown format is tolerated, not enforced


_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_SUBSCHEMAS = ("items", "additionalProperties", "not", "if", "then", "else", "contains")


def _find_refused(schema: Any) -> Optional[str]:
    """The first refused keyword in ``schema`` or any schema nested in it, or None.

    Only schema positions are searched (``properties`` values, ``items``,
    ``anyOf`` entries, ...): a field *named* ``if`` is fine, and keywords the
    client does not enforce may hold anything.
    """
    stack = [(schema, 0)]
    while stack:
        node, level = stack.pop()
        if not isinstance(node, dict):
            continue
        if level > 32:
            return "nesting deeper than 32 levels"
        for key in node:
            if key in REFUSED_KEYWORDS:
                return str(key)
        for key in _SUBSCHEMAS:
            if key in node:
                stack.append((node[key], level + 1))
        for key in _SUBSCHEMA_LISTS:
            entries = node.get(key)
            if isinstance(entries, list):
                stack.extend((entry, level + 1) for entry in entries)
        for key in _SUBSCHEMA_MAPS:
            entries = node.get(key)
            if isinstance(entries, dict):
                stack.extend((entry, level + 1) for entry in entries.values())
    return None


def quoted(text: Any, limit: int = 64) -> str:
    """A name a server chose, quoted for a message: ASCII only, cut to ``limit`` code points.

    Every code point outside printable ASCII is written as a ``\\x``,
    ``\\u`` or ``\\U`` escape (:func:`ascii`), so no control, bidi or
    invisible character of the name reaches a log, a terminal or a page, and
    a long name cannot make the message long.
    """
    shown = text if isinstance(text, str) else str(text)
    return ascii(shown if len(shown) <= limit else shown[:limit] + "...")


def _number(value: Any) -> bool:
    return (type(value) is int or type(value) is float) and not (type(value) is float and not math.isfinite(value))


def _const_options(entries: Any, where: str) -> list[str]:
    if not isinstance(entries, list) or not entries:
        raise SchemaRefused(f"{where} must be a non-empty list of {{const, title}} options")
    consts = []
    for entry in entries:
        if not isinstance(entry, dict) or type(entry.get("const")) is not str:
            raise SchemaRefused(f"{where} allows only {{const, title}} options")
        consts.append(entry["const"])
    return consts


def _string_enum(values: Any, where: str) -> list[str]:
    if not isinstance(values, list) or not values or not all(type(v) is str for v in values):
        raise SchemaRefused(f"{where} must be a non-empty list of strings")
    return list(values)


def _bound(prop: Mapping[str, Any], key: str) -> Optional[float]:
    value = prop.get(key)
    return value if _number(value) else None


def _length(prop: Mapping[str, Any], key: str) -> Optional[int]:
    value = prop.get(key)
    return value if type(value) is int and value >= 0 else None


def _compile_property(name: str, prop: Any) -> Check:
    if not isinstance(prop, dict):
        raise SchemaRefused(f"property {quoted(name)} is not an object")
    kind = prop.get("type")
    if isinstance(kind, list):
        raise SchemaRefused(f"property {quoted(name)} has a type list")
    if kind == "object":
        raise SchemaRefused(f"property {quoted(name)} is a nested object")
    if not isinstance(kind, str) or kind not in PRIMITIVE_TYPES:
        raise SchemaRefused(f"property {quoted(name)} has no primitive type")
    if "enum" in prop and not isinstance(prop["enum"], list):
        raise SchemaRefused(f"property {quoted(name)} enum is not a list")
    if "anyOf" in prop and kind != "array":
        raise SchemaRefused(f"property {quoted(name)} uses anyOf outside a multi-select")
    if "oneOf" in prop and kind != "string":
        raise SchemaRefused(f"property {quoted(name)} uses oneOf outside a single-select")
    if kind == "string":
        return _compile_string(name, prop)
    if kind in ("number", "integer"):
        for key in _NUMERIC_KEYWORDS:
            if key in prop and not _number(prop[key]):
                raise SchemaRefused(f"property {quoted(name)} {key} is not a finite number")
        return _compile_number(prop, integer=kind == "integer")
    if kind == "boolean":
        enum_b = prop.get("enum")
        return lambda v: None if type(v) is bool and (enum_b is None or any(v is e for e in enum_b)) else "must be a boolean"
    return _compile_array(name, prop)


def _compile_string(name: str, prop: Mapping[str, Any]) -> Check:
    allowed: Optional[frozenset[str]] = None
    if "enum" in prop:
        allowed = frozenset(_string_enum(prop["enum"], f"property {quoted(name)} enum"))
    if "oneOf" in prop:
        options = frozenset(_const_options(prop["oneOf"], f"property {quoted(name)} oneOf"))
        allowed = options if allowed is None else allowed & options
    low, high = _length(prop, "minLength"), _length(prop, "maxLength")
    fmt = prop.get("format")
    fmt = fmt if isinstance(fmt, str) and fmt in FORMATS else None
    pattern: Optional[re.Pattern[str]] = None
    if isinstance(prop.get("pattern"), str):
        try:
            pattern = re.compile(prop["pattern"])
        except (re.error, RecursionError, OverflowError):
            pattern = None  # an ECMA-only pattern: tolerated, not enforced

    def check(value: Any) -> Optional[str]:
        if type(value) is not str:
            return "must be a string"
        if allowed is not None and value not in allowed:
            return "is not one of the allowed values"
        if low is not None and len(value) < low:
            return f"is shorter than {low}"
        if high is not None and len(value) > high:
            return f"is longer than {high}"
        if fmt is not None and not _format_ok(fmt, value):
            return f"is not a valid {fmt}"
        if pattern is not None and pattern.search(value) is None:
            return "does not match the pattern"
        return None

    return check


def _compile_number(prop: Mapping[str, Any], integer: bool) -> Check:
    low, high = _bound(prop, "minimum"), _bound(prop, "maximum")
    enum_n = prop.get("enum") if isinstance(prop.get("enum"), list) else None
    word = "an integer" if integer else "a number"

    def check(value: Any) -> Optional[str]:
        if not _number(value):
            return f"must be {word}"
        if integer and type(value) is float and not value.is_integer():
            return f"must be {word}"
        if low is not None and value < low:
            return f"is below the minimum {low}"
        if high is not None and value > high:
            return f"is above the maximum {high}"
        if enum_n is not None and not any(type(e) in (int, float) and e == value for e in enum_n):
            return "is not one of the allowed values"
        return None

    return check


def _compile_array(name: str, prop: Mapping[str, Any]) -> Check:
    items = prop.get("items")
    if not isinstance(items, dict):
        raise SchemaRefused(f"property {quoted(name)} is an array without string items")
    if items.get("type") == "object" or "properties" in items:
        raise SchemaRefused(f"property {quoted(name)} is an array of objects")
    if "anyOf" in items:
        options = frozenset(_const_options(items["anyOf"], f"property {quoted(name)} items.anyOf"))
    elif items.get("type") == "string" and "enum" in items:
        options = frozenset(_string_enum(items["enum"], f"property {quoted(name)} items.enum"))
    else:
        raise SchemaRefused(f"property {quoted(name)} is an array that is not a multi-select")
    low, high = _length(prop, "minItems"), _length(prop, "maxItems")

    def check(value: Any) -> Optional[str]:
        if type(value) is not list:
            return "must be a list of choices"
        for item in value:
            if type(item) is not str or item not in options:
                return "holds a value that is not one of the choices"
        if low is not None and len(value) < low:
            return f"has fewer than {low} choices"
        if high is not None and len(value) > high:
            return f"has more than {high} choices"
        return None

    return check


class FormSchema:
    """A form schema that passed the subset check, compiled for checking answers."""

    __slots__ = ("checks", "required", "closed", "fields")

    def __init__(self, checks: dict[str, Check], required: tuple[str, ...], closed: bool, fields: dict[str, dict[str, bool]]) -> None:
        self.checks = checks
        self.required = required
        #: True when the schema sets ``additionalProperties: false``.
        self.closed = closed
        #: ``{name: {"sensitive_suspected": bool}}`` (the context's ``fields``), computed once.
        self.fields = fields

    def check_content(self, content: Any) -> Optional[str]:
        """Why an accepted answer's ``content`` does not fit, or None when it does."""
        if content is None:
            content = {}
        if type(content) is not dict:
            return "content is not an object"
        for name in self.required:
            if name not in content:
                return f"required field {quoted(name)} is missing"
        checks = self.checks
        for name, value in content.items():
            check = checks.get(name)
            if check is None:
                if self.closed:
                    return f"field {quoted(name)} is not in the form"
                if not _primitive_answer(value):
                    return f"field {quoted(name)} is not a string, number, boolean or list of strings"
                continue
            problem = check(value)
            if problem is not None:
                return f"field {quoted(name)} {problem}"
        return None


def _primitive_answer(value: Any) -> bool:
    t = type(value)
    if t is str or t is bool or t is int:
        return True
    if t is float:
        return math.isfinite(value)
    return t is list and all(type(v) is str for v in value)


def compile_form(schema: Any) -> FormSchema:
    """Check ``schema`` against the served subset and compile it.

    Raises:
        SchemaRefused: the schema is outside the subset; the message says why.
    """
    if not isinstance(schema, dict):
        raise SchemaRefused("requestedSchema is not an object")
    if schema.get("type") != "object":
        raise SchemaRefused('requestedSchema must have type "object"')
    refused = _find_refused(schema)
    if refused is not None:
        raise SchemaRefused(f"requestedSchema uses {refused}, which forms do not allow")
    for key in ("oneOf", "anyOf"):
        if key in schema:
            raise SchemaRefused(f"requestedSchema uses a top-level {key}")
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        raise SchemaRefused("requestedSchema has no properties object")
    additional = schema.get("additionalProperties", True)
    if not isinstance(additional, bool):
        raise SchemaRefused("requestedSchema additionalProperties must be true or false")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(type(r) is str for r in required):
        raise SchemaRefused("requestedSchema required must be a list of field names")
    for name in required:
        if name not in properties:
            raise SchemaRefused(f"required field {quoted(name)} is not in the form")
    checks = {name: _compile_property(name, prop) for name, prop in properties.items()}
    return FormSchema(checks, tuple(dict.fromkeys(required)), additional is False, sensitive_fields(schema))


class FormCache:
    """Compiled forms by their exact value; a server asking the same form again reuses it.

    The key is the schema in ``marshal`` format 2: it keeps types apart
    (``True``, ``1`` and ``1.0`` differ, as do key orders) and costs a third
    of JSON text, once per elicitation. A value never compiled before is
    first checked to be plain JSON (no NaN or infinity). Bounded: past
    ``size`` entries it starts over. Lookups and stores are single dict
    operations, safe to share between threads.
    """

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._forms: dict[object, FormSchema] = {}

    def get(self, schema: Any) -> FormSchema:
        """The compiled form for ``schema`` (compiled on first use).

        Raises:
            SchemaRefused: as :func:`compile_form`.
        """
        key: object
        try:
            key = _marshal(schema, 2)
        except ValueError:  # a str or int subclass (a schema built in Python), or nested past marshal's limit
            key = None
        form = self._forms.get(key) if key is not None else None
        if form is None:
            try:
                text = dumps(schema)
            except (TypeError, ValueError):
                raise SchemaRefused("requestedSchema is not plain JSON") from None
            if key is None:
                key = text  # text, never equal to a marshal key
                form = self._forms.get(key)
        if form is None:
            form = compile_form(schema)
            if len(self._forms) >= self.size:
                self._forms = {}
            self._forms[key] = form
        return form

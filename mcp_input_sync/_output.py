"""A tool's ``structuredContent`` checked against the ``outputSchema`` its listing gave.

*MCP 2026-07-28, server/tools* ("Output Schema"): a server MUST return
structured results that conform to a tool's ``outputSchema``, and a client
SHOULD validate them. The schema is used as the server sent it: its
``$schema`` picks the dialect (2020-12 when absent), a ``$ref`` resolves
only inside the schema itself or to the JSON Schema meta-schemas
``jsonschema`` ships, and a ``$ref`` to anything else fails the check
instead of being fetched (*MCP 2026-07-28, basic*, "$ref Resolution").
``jsonschema`` is imported on the first check, never at import.
See docs/reference.md#output-schemas.
"""

from __future__ import annotations

import threading
from typing import Any

from . import reflect
from ._protocol.forms import quoted
from ._protocol.jsonrpc import JsonDict
from ._protocol.retry import tool_is_idempotent
from .errors import ClientError

#: A schema with more nodes than this is not checked: the call fails (turn the check off to take it).
MAX_SCHEMA_NODES = 10_000
#: Characters of the validator's message kept in the error.
MESSAGE_LIMIT = 500


def _output_error(name: str, why: str, result: JsonDict) -> ClientError:
    return ClientError("protocol", f"tool {quoted(name)}: {why}", data=result, check="output")


def _nodes(schema: Any) -> int:
    """How many dicts and lists ``schema`` holds (counting stops past the bound)."""
    count = 0
    stack = [schema]
    while stack and count <= MAX_SCHEMA_NODES:
        node = stack.pop()
        if isinstance(node, dict):
            count += 1
            stack.extend(node.values())
        elif isinstance(node, list):
            count += 1
            stack.extend(node)
    return count


def compile_schema(schema: Any) -> Any:
    """A validator for ``schema`` that fetches nothing.

    Raises:
        ValueError: the schema is too large, or not a valid schema of its dialect.
    """
    import jsonschema  # type: ignore[import-untyped,unused-ignore]
    from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped,unused-ignore]
    from referencing import Registry

    if _nodes(schema) > MAX_SCHEMA_NODES:
        raise ValueError(f"its outputSchema has more than {MAX_SCHEMA_NODES} nodes, too many to check")
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        raise ValueError(f"its outputSchema is not a valid JSON Schema: {reflect.text(str(exc.message), MESSAGE_LIMIT)}") from None
    return cls(schema, registry=Registry())  # its default retrieve refuses every URI it does not hold


class OutputSchemas:
    """The ``outputSchema`` of every tool a listing showed this client, their validators, and which
    tools it called safe to run twice (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._schemas: dict[str, Any] = {}
        self._validators: dict[str, Any] = {}
        #: The tools whose last listing said ``readOnlyHint`` or ``idempotentHint`` (read without the lock: one set).
        self._repeatable: set[str] = set()
        #: True once any ``tools/list`` was read.
        self.listed = False

    def note(self, tools: list[JsonDict]) -> None:
        """Remember the schemas of a listing (a page or all of them)."""
        with self._lock:
            self.listed = True
            for tool in tools:
                name = tool.get("name") if isinstance(tool, dict) else None
                if not isinstance(name, str):
                    continue
                schema = tool.get("outputSchema")
                schema = schema if isinstance(schema, (dict, bool)) else None
                if name not in self._schemas or self._schemas[name] != schema:
                    self._validators.pop(name, None)
                self._schemas[name] = schema
                if tool_is_idempotent(tool):
                    self._repeatable.add(name)
                else:
                    self._repeatable.discard(name)

    def repeatable(self, name: str) -> bool:
        """True when the last listing of tool ``name`` said it is read-only or idempotent (safe to run twice)."""
        return name in self._repeatable

    def knows(self, name: str) -> bool:
        """True when a listing showed tool ``name``."""
        with self._lock:
            return name in self._schemas

    def check(self, name: str, result: JsonDict) -> None:
        """Check one ``CallToolResult`` of tool ``name``; an ``isError`` result or an unknown tool passes.

        Raises:
            ClientError: ``protocol`` (check ``output``) when the result has
                no ``structuredContent`` though the tool declares a schema,
                when it does not match, or when the schema cannot be used
                (invalid, too large, a ``$ref`` that does not resolve within it).
        """
        if result.get("isError") is True:
            return
        with self._lock:
            schema = self._schemas.get(name)
            validator = self._validators.get(name)
        if schema is None:
            return
        if "structuredContent" not in result:
            raise _output_error(name, "it declares an outputSchema but its result has no structuredContent", result)
        if validator is None:
            try:
                validator = compile_schema(schema)
            except ValueError as exc:
                raise _output_error(name, str(exc), result) from None
            with self._lock:
                if self._schemas.get(name) == schema:
                    self._validators[name] = validator
        from jsonschema.exceptions import best_match
        from referencing.exceptions import Unresolvable

        try:
            error = best_match(validator.iter_errors(result["structuredContent"]))
        except Unresolvable as exc:
            ref = reflect.text(str(getattr(exc, "ref", "")), 200)
            raise _output_error(name, f"its outputSchema has a $ref that does not resolve within it ({ref!r}); nothing is fetched", result) from None
        except RecursionError:
            raise _output_error(name, "its outputSchema nests too deeply to check", result) from None
        if error is not None:
            where = reflect.text(str(getattr(error, "json_path", "$")), 200)
            message = reflect.text(str(error.message), MESSAGE_LIMIT)
            raise _output_error(name, f"structuredContent does not match its outputSchema at {where}: {message}", result)


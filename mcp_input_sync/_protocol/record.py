"""A small base for plain value classes: equality, hashing and repr from ``__slots__``.

The library's value classes use it instead of ``dataclasses``, whose import
(it pulls in ``inspect``) alone costs several milliseconds of every start.
"""

from __future__ import annotations

from typing import Any


class Record:
    """Equality, hash and repr over the fields named in ``__slots__`` (in order)."""

    __slots__: tuple[str, ...] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self) or not isinstance(other, Record):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        # like a frozen dataclass: a record holding a dict or list is not hashable
        return hash((type(self).__name__, *self._values()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"


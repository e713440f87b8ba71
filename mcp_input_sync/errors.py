"""Exceptions of mcp_input_sync.

::

    Exception
    ├── ClientError       every failure a call can raise; ``.kind`` says which
    └── InputRefused      raised by a callback to refuse a server request

``ClientError.kind`` is one of :data:`KINDS`. ``.code``, ``.message`` and
``.data`` carry the JSON-RPC error when there is one; ``.check`` names the
safety check that refused, or is ``None``. Both exceptions pickle.
"""

from __future__ import annotations

from typing import Any, Optional

#: Every value ``ClientError.kind`` can take.
KINDS = frozenset(
    {
        "input_handler",  # a callback failed while the library answered modern input
        "protocol",  # the server broke the protocol, or a version could not be agreed
        "refused",  # a safety check refused the server's input request
        "declined",  # the user declined and the server asked the same again
        "remote",  # the server answered with a JSON-RPC error
        "timeout",  # a call's timeout or max_total_timeout ran out
        "transport",  # the connection broke or could not be made
        "auth",  # HTTP 401 or 403
        "cancelled",  # the caller cancelled the call
        "closed",  # the client is closed (or was used in a forked child)
    }
)


class ClientError(Exception):
    """A call failed.

    Attributes:
        kind: what failed, one of :data:`KINDS`.
        code: the JSON-RPC error code, when there is one.
        message: a human-readable description.
        data: the JSON-RPC error's ``data``, or other detail.
        check: the name of the safety check that refused, else ``None``.
    """

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        code: Optional[int] = None,
        data: Any = None,
        check: Optional[str] = None,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown ClientError kind {kind!r}")
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.code = code
        self.data = data
        self.check = check

    def __reduce__(self) -> Any:
        return (_rebuild_client_error, (self.kind, self.message, self.code, self.data, self.check))

    def __str__(self) -> str:
        code = "" if self.code is None else f" {self.code}"
        return f"[{self.kind}{code}] {self.message}"

    def __repr__(self) -> str:
        return (
            f"ClientError(kind={self.kind!r}, message={self.message!r}, code={self.code!r}, "
            f"check={self.check!r})"
        )


def _rebuild_client_error(
    kind: str, message: str, code: Optional[int], data: Any, check: Optional[str]
) -> ClientError:
    return ClientError(kind, message, code=code, data=data, check=check)


class InputRefused(Exception):
    """Raise from a callback to refuse a legacy server request with a JSON-RPC error.

    Args:
        code: the JSON-RPC error code to answer with (an int).
        message: the error message sent to the server.
        data: optional JSON-serialisable ``data`` for the error.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        if not isinstance(code, int) or isinstance(code, bool):
            raise TypeError("InputRefused code must be an int")
        super().__init__(code, message, data)
        self.code = code
        self.message = str(message)
        self.data = data

    def __str__(self) -> str:
        return f"{self.code} {self.message}"

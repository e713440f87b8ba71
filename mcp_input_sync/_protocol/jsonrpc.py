"""JSON-RPC 2.0 framing: error codes, encoding, decoding and classification.

Request ids are strings or integers; ``0`` and ``""`` are real ids, so code
here never tests an id for truth. Encoding escapes every non-ASCII character,
so no string (a lone surrogate, say) can make the writer fail. Decoding
refuses ``NaN``, ``Infinity`` and ``-Infinity``, which are not JSON.
"""

from __future__ import annotations

import json
from typing import Any, Hashable, Mapping, Optional, Union

JsonDict = dict[str, Any]
RequestId = Union[int, str]

# Standard JSON-RPC codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# Implementation-defined server error range (JSON-RPC -32000..-32099): busy and
# rate-limited answers of this client.
SERVER_ERROR = -32000
# MCP codes.
URL_ELICITATION_REQUIRED = -32042
HEADER_MISMATCH = -32020
MISSING_CAPABILITY = -32021
UNSUPPORTED_VERSION = -32022
#: The default code of a refused sampling request (the ``sampling['rejection_code']`` option).
USER_REJECTED = -1

def _refuse(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_ENCODER = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":"), default=_refuse)
# NaN, Infinity and -Infinity are not JSON (RFC 8259): a message holding one is
# refused like any other bad JSON.  A number too large for a float (1e999) is
# JSON and decodes to an infinity; where numbers are used (progress, form
# bounds and defaults) non-finite ones are refused.
_DECODER = json.JSONDecoder(parse_constant=_no_constant)
_decode = _DECODER.decode
_scan = _DECODER.scan_once  # type: ignore[attr-defined]
try:  # the C encoder, made once: JSONEncoder.encode builds a new one per call
    from _json import make_encoder as _make_encoder

    _c_encode: Any = _make_encoder(None, _refuse, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, False)
except ImportError:  # pragma: no cover - CPython always has _json
    _c_encode = None


def dumps(value: Any) -> str:
    """Compact, ASCII-only JSON text of ``value``.

    Raises:
        TypeError, ValueError: ``value`` holds something JSON cannot carry
            (a non-JSON type, NaN or infinity, or a reference cycle).
    """
    if _c_encode is None or type(value) is not dict:
        return _ENCODER.encode(value)
    try:
        return "".join(_c_encode(value, 0))
    except RecursionError:
        raise ValueError("a reference cycle or nesting too deep to encode") from None


def encode(message: JsonDict) -> bytes:
    """Encode one message as a newline-terminated ASCII line.

    Raises:
        TypeError, ValueError: the message holds something JSON cannot carry.
    """
    return (dumps(message) + "\n").encode("ascii")


def decode(data: Union[bytes, str]) -> Any:
    """Decode one message; raises ValueError on bad JSON (``NaN`` and ``Infinity`` included), bad UTF-8 or nesting too deep to decode."""
    if isinstance(data, bytes):
        data = data.decode("utf-8")
    try:
        value, end = _scan(data, 0)  # the common case: a line that starts with the value
    except StopIteration:
        value, end = None, -1
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    if end == len(data) or (end > 0 and data[end:].isspace()):
        return value
    try:
        return _decode(data)  # leading white space, trailing junk, or no value: the full rules
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def is_valid_id(value: Any) -> bool:
    """True for the id types JSON-RPC allows on a request: str or int (not bool)."""
    t = type(value)
    return t is str or t is int


def id_key(value: RequestId) -> Hashable:
    """A dict key that keeps ``1`` and ``"1"`` apart."""
    return (type(value) is str, value)


def request(id: RequestId, method: str, params: Optional[JsonDict] = None) -> JsonDict:
    msg: JsonDict = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def notification(method: str, params: Optional[JsonDict] = None) -> JsonDict:
    msg: JsonDict = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def result(id: RequestId, value: JsonDict) -> JsonDict:
    return {"jsonrpc": "2.0", "id": id, "result": value}


def error(id: Optional[RequestId], code: int, message: str, data: Any = None) -> JsonDict:
    err: JsonDict = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": id, "error": err}


# Message kinds returned by classify().
REQUEST = "request"
NOTIFICATION = "notification"
RESPONSE = "response"
INVALID = "invalid"


def classify(message: Any) -> str:
    """Say what a decoded message is: REQUEST, NOTIFICATION, RESPONSE or INVALID."""
    if type(message) is not dict:
        return INVALID
    method = message.get("method")
    if method is not None:
        if type(method) is not str:
            return INVALID
        return REQUEST if "id" in message else NOTIFICATION
    if "id" in message and ("result" in message or "error" in message):
        return RESPONSE
    return INVALID


def with_meta(params: Optional[Mapping[str, Any]], request_meta: Mapping[str, Any]) -> JsonDict:
    """A copy of ``params`` whose ``_meta`` also holds ``request_meta`` (the caller's keys kept)."""
    out = dict(params or {})
    merged = dict(out.get("_meta") or {})
    merged.update(request_meta)
    out["_meta"] = merged
    return out

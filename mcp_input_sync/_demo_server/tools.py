"""The demo server's tools: ``plan_trip``, ``book_hotel``, ``pack_bags`` and ``echo``.

:data:`TOOLS` is what ``tools/list`` returns; :data:`TOOL_FUNCTIONS` maps
each name to the function that runs it on the call's own thread.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from typing import Final

from .wire import Abandoned, JSONObject, RequestFailed, ToolCall

#: The tools as ``tools/list`` returns them.
TOOLS: Final[list[JSONObject]] = [
    {
        "name": "plan_trip",
        "title": "Plan a trip",
        "description": (
            "Plans a trip: logs, asks for the client's roots, asks the user for "
            "trip details with a form, and asks the client's LLM for a sight."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "city": {
                    "type": "string",
                    "description": "The city to visit.",
                    "default": "Lisbon",
                }
            },
            "additionalProperties": False,
        },
    },
    {
        "name": "book_hotel",
        "title": "Book a hotel",
        "description": "Asks the user to visit a booking page (URL elicitation); the client never opens it.",
        "inputSchema": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "The city.", "default": "Lisbon"}},
            "additionalProperties": False,
        },
    },
    {
        "name": "pack_bags",
        "title": "Pack the bags",
        "description": "A long call that reports progress after each item it packs.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "items": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
                "delay": {"type": "number", "minimum": 0, "maximum": 5, "default": 0.2},
            },
            "additionalProperties": False,
        },
    },
    {
        "name": "echo",
        "title": "Echo",
        "description": "Returns its text unchanged.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "The text to return."}},
            "required": ["text"],
            "additionalProperties": False,
        },
    },
]

_PLAN_STEPS: Final = 4


def tool_result(text: str, *, is_error: bool = False) -> JSONObject:
    """Build a ``CallToolResult`` with one text block.

    Args:
        text: The text of the block.
        is_error: The ``isError`` flag.

    Returns:
        The result object.
    """
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def _trip_form(version: str | None) -> JSONObject:
    """Build the ``elicitation/create`` params of plan_trip for a version.

    Args:
        version: The negotiated protocol version.

    Returns:
        Form-mode params; ``mode`` only in 2025-11-25, no ``default`` on
        string, number and enum fields in 2025-06-18.
    """
    with_defaults = version != "2025-06-18"
    travellers: JSONObject = {"type": "integer", "title": "Travellers", "minimum": 1}
    budget: JSONObject = {"type": "number", "title": "Budget"}
    pace: JSONObject = {"type": "string", "title": "Pace", "enum": ["relaxed", "normal", "packed"]}
    if with_defaults:
        travellers["default"] = 2
        budget["default"] = 1500
        pace["default"] = "normal"
    params: JSONObject = {
        "message": "Trip details",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "travellers": travellers,
                "budget": budget,
                "start": {"type": "string", "title": "Start date", "format": "date"},
                "pace": pace,
            },
            "required": ["budget"],
        },
    }
    if version == "2025-11-25":
        params = {"mode": "form", **params}
    return params


def _describe_roots(result: JSONObject) -> str:
    """Summarise a ``ListRootsResult``.

    Args:
        result: The client's answer.

    Returns:
        A comma-separated list of root URIs, or ``"none"``.
    """
    roots = result.get("roots")
    uris = []
    if isinstance(roots, list):
        for root in roots:
            if isinstance(root, dict) and isinstance(root.get("uri"), str):
                uris.append(root["uri"])
    return ", ".join(uris) if uris else "none"


def _sampled_text(result: JSONObject) -> str:
    """Extract the text of a ``CreateMessageResult``.

    Args:
        result: The client's answer.

    Returns:
        The text blocks joined by spaces, or ``"(no text)"``.
    """
    content = result.get("content")
    blocks = content if isinstance(content, list) else [content]
    texts = [
        block["text"]
        for block in blocks
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
    ]
    return " ".join(texts) if texts else "(no text)"


def _plan_trip(call: ToolCall, arguments: JSONObject) -> JSONObject:
    """The ``plan_trip`` tool: every kind of server request in one call.

    Args:
        call: The call in flight.
        arguments: The tool arguments.

    Returns:
        The ``CallToolResult``.

    Raises:
        Abandoned: The call was cancelled or stdin closed.
    """
    city = arguments.get("city", "Lisbon")
    if not isinstance(city, str):
        return tool_result("plan_trip: 'city' must be a string", is_error=True)
    session = call.session
    try:
        call.check()
        call.log("info", "demo", f"planning a trip to {city}")
        call.progress(1, _PLAN_STEPS, "logged the plan")

        call.check()
        if session.client_has("roots"):
            roots = _describe_roots(call.request("roots/list", None))
            call.progress(2, _PLAN_STEPS, "got the roots")
        else:
            roots = "not offered by the client"
            call.progress(2, _PLAN_STEPS, "skipped the roots")

        call.check()
        travellers: object = 2
        budget: object = "not given"
        start: object = "any day"
        pace: object = "normal"
        if session.client_has("elicitation"):
            answer = call.request("elicitation/create", _trip_form(session.version))
            action = answer.get("action")
            if action in ("decline", "cancel"):
                verb = "declined" if action == "decline" else "cancelled"
                return tool_result(f"The trip form was {verb}: no trip planned.", is_error=True)
            if action != "accept":
                return tool_result("elicitation/create failed: unknown action", is_error=True)
            content = answer.get("content")
            if isinstance(content, dict):
                travellers = content.get("travellers", travellers)
                budget = content.get("budget", budget)
                start = content.get("start", start)
                pace = content.get("pace", pace)
            form = f"{travellers} traveller(s), budget {budget}, starting {start}, {pace} pace"
            call.progress(3, _PLAN_STEPS, "got the trip details")
        else:
            form = "not offered by the client (defaults used)"
            call.progress(3, _PLAN_STEPS, "skipped the form")

        call.check()
        if session.client_has("sampling"):
            sampled = call.request(
                "sampling/createMessage",
                {
                    "messages": [
                        {
                            "role": "user",
                            "content": {
                                "type": "text",
                                "text": f"Suggest one sight in {city} for {pace} travellers",
                            },
                        }
                    ],
                    "maxTokens": 100,
                    "systemPrompt": "You are a travel guide.",
                },
            )
            sight = _sampled_text(sampled)
            call.progress(4, _PLAN_STEPS, "got a suggestion")
        else:
            sight = "sampling not offered by the client"
            call.progress(4, _PLAN_STEPS, "skipped sampling")
    except RequestFailed as failure:
        return tool_result(failure.text, is_error=True)
    return tool_result(f"Trip to {city}. Roots: {roots}. Form: {form}. Suggested sight: {sight}")


def _book_hotel(call: ToolCall, arguments: JSONObject) -> JSONObject:
    """The ``book_hotel`` tool: one URL elicitation, then its completion notice.

    Args:
        call: The call in flight.
        arguments: The tool arguments.

    Returns:
        The ``CallToolResult``.

    Raises:
        Abandoned: The call was cancelled or stdin closed.
    """
    city = arguments.get("city", "Lisbon")
    if not isinstance(city, str):
        return tool_result("book_hotel: 'city' must be a string", is_error=True)
    session = call.session
    if not session.client_has_url_elicitation():
        return tool_result("book_hotel needs a client that offers URL elicitation", is_error=True)
    call.check()
    elicitation_id = f"hotel-{session.new_id()}"
    url = "https://checkout.example.com/hotel?city=" + urllib.parse.quote(city, safe="")
    try:
        answer = call.request(
            "elicitation/create",
            {
                "mode": "url",
                "message": f"Pay the deposit for a hotel in {city} on the booking site.",
                "url": url,
                "elicitationId": elicitation_id,
            },
        )
    except RequestFailed as failure:
        return tool_result(failure.text, is_error=True)
    action = answer.get("action")
    if action != "accept":
        return tool_result("The booking page was not accepted: no hotel booked.", is_error=True)
    session.send(
        {
            "jsonrpc": "2.0",
            "method": "notifications/elicitation/complete",
            "params": {"elicitationId": elicitation_id},
        }
    )
    return tool_result(f"Hotel in {city} held; the booking site confirms the deposit.")


_BAG_ITEMS: Final[tuple[str, ...]] = (
    "passport", "tickets", "charger", "sunscreen", "walking shoes", "umbrella", "guidebook",
    "adapter", "sunglasses", "jacket", "swimsuit", "camera", "snacks", "water bottle",
    "notebook", "pen", "headphones", "scarf", "hat", "map",
)


def _pack_bags(call: ToolCall, arguments: JSONObject) -> JSONObject:
    """The ``pack_bags`` tool: a long call reporting progress.

    Args:
        call: The call in flight.
        arguments: ``items`` (1 to 20) and ``delay`` (0 to 5 seconds).

    Returns:
        The ``CallToolResult``.

    Raises:
        Abandoned: The call was cancelled or stdin closed.
    """
    items = arguments.get("items", 5)
    delay = arguments.get("delay", 0.2)
    if type(items) is not int or not 1 <= items <= len(_BAG_ITEMS):
        return tool_result("pack_bags: 'items' must be an integer from 1 to 20", is_error=True)
    if type(delay) not in (int, float) or not 0 <= delay <= 5:
        return tool_result("pack_bags: 'delay' must be a number from 0 to 5", is_error=True)
    for done, item in enumerate(_BAG_ITEMS[:items], start=1):
        if call.cancelled.wait(float(delay)):
            raise Abandoned()
        call.check()
        call.progress(done, items, f"packed the {item}")
    call.log("info", "demo", f"packed {items} items")
    return tool_result(f"Packed {items} items: {', '.join(_BAG_ITEMS[:items])}.")


def _echo(call: ToolCall, arguments: JSONObject) -> JSONObject:
    """The ``echo`` tool.

    Args:
        call: The call in flight (unused).
        arguments: The tool arguments; ``text`` must be a string.

    Returns:
        The ``CallToolResult`` holding ``text``.
    """
    text = arguments.get("text")
    if not isinstance(text, str):
        return tool_result("echo: 'text' must be a string", is_error=True)
    return tool_result(text)


TOOL_FUNCTIONS: Final[dict[str, Callable[[ToolCall, JSONObject], JSONObject]]] = {
    "plan_trip": _plan_trip,
    "book_hotel": _book_hotel,
    "pack_bags": _pack_bags,
    "echo": _echo,
}


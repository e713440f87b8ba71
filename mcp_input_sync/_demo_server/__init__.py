"""A small legacy-era MCP server over stdio: the embedded server of the demo.

Run as ``python -m mcp_input_sync._demo_server``.  It exists so that
``python -m mcp_input_sync demo`` (and the library's own tests) can show every
kind of server request without installing anything: it is written with the
standard library only.

Contract:

* **Framing.** Newline-delimited JSON-RPC 2.0 on stdin/stdout, UTF-8.  Every
  line written to stdout is one complete JSON object, flushed at once;
  nothing else is ever written there (diagnostics go to stderr).  Batches,
  undecodable lines and non-object messages are answered with a JSON-RPC
  error whose ``id`` is ``null``.  The process exits with status 0 on stdin
  EOF; tool calls still waiting for the client are abandoned.
* **Lifecycle.** ``initialize`` echoes the client's ``protocolVersion`` when
  it is 2025-11-25, 2025-06-18 or 2025-03-26 and otherwise answers
  2025-11-25; capabilities are ``{"tools": {}, "logging": {}}``.  Requests
  other than ``initialize`` and ``ping`` before it, and a second
  ``initialize``, get -32600.  ``notifications/initialized`` is ignored.
* **Methods.** ``ping`` and ``logging/setLevel`` answer ``{}`` (the level is
  kept: only logs at or above it are sent; before any ``setLevel`` the
  threshold is ``info``; an unknown level is -32602).  ``tools/list`` lists
  ``plan_trip``, ``book_hotel``, ``pack_bags`` and ``echo`` (:data:`TOOLS`).  ``tools/call`` runs the tool
  on a thread of its own while the reader keeps reading, so the tool can
  wait for the client's answers to its requests.  Any other method: -32601
  (so the library's ``server/discover`` probe reads this server as legacy).
* **plan_trip(city="Lisbon")** sends, one after the other and waiting for
  each answer: a ``notifications/message`` (info, logger ``demo``), a
  ``roots/list`` request, an ``elicitation/create`` form and a
  ``sampling/createMessage`` request, and a ``notifications/progress`` after
  each of these four steps when the call carried ``_meta.progressToken``.
  A request whose capability the client did not declare in ``initialize``
  is not sent (the step is reported as skipped); 2025-03-26 has no
  elicitation, so the form is skipped there.  The result is a
  ``CallToolResult`` whose text names the roots, the form answer and the
  sampled text.  A declined or cancelled form, or an error answer to any of
  its requests, ends the tool with ``isError: true`` (an error's message is
  quoted in the text).
* **book_hotel(city="Lisbon")** (2025-11-25, clients declaring
  ``elicitation.url``) sends a URL-mode ``elicitation/create`` for a
  booking page on ``https://checkout.example.com``; on accept it sends
  ``notifications/elicitation/complete`` and succeeds, on decline or cancel
  it ends with ``isError: true``.  Without URL mode it is an
  ``isError: true`` result.
* **pack_bags(items=5, delay=0.2)** is a long call: it packs ``items``
  things (1 to 20), waiting ``delay`` seconds (0 to 5) before each and
  sending ``notifications/progress`` after each when the call carried a
  progress token, then logs at info and returns.
* **echo(text)** returns ``text``.  An unknown tool or bad arguments give an
  ``isError: true`` result, not a JSON-RPC error.
* **Server requests** carry string ids ``"demo-<n>"``, unique for the life
  of the process, and params shaped as the negotiated version's schema
  wants (``mode: "form"`` only in 2025-11-25; in 2025-06-18 the form has no
  ``mode`` and no ``default`` on string, number or enum fields, which that
  version does not define).  A request not answered within
  :data:`REQUEST_TIMEOUT` seconds is cancelled with ``notifications/cancelled``.
* **Cancellation.** ``notifications/cancelled`` naming a ``tools/call`` in
  flight abandons it: no response is sent, and the server request it was
  waiting for is cancelled with ``notifications/cancelled``.

Layout: :mod:`.wire` holds the connection (one flushed JSON line per message,
server requests and their answers, a tool call in flight); :mod:`.tools` the
four tools and ``tools/list``; :mod:`.dispatch` the reader loop that routes
each line, :func:`serve` and :func:`main`; ``__main__`` runs :func:`main`.
"""

from __future__ import annotations

from .dispatch import LEGACY_VERSIONS, SERVER_INFO, main, serve
from .tools import TOOLS
from .wire import REQUEST_TIMEOUT

__all__ = ["LEGACY_VERSIONS", "REQUEST_TIMEOUT", "SERVER_INFO", "TOOLS", "main", "serve"]

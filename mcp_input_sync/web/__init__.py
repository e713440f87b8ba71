"""The web bridge: let people answer a server's requests for input through a Django or Flask app.

Framework-neutral core (this package): :class:`PendingInputBroker` holds
pending inputs; :class:`WebHandler` (an :class:`~mcp_input_sync.InputHandler`)
parks each form or URL elicitation and sampling request there until the
owning user answers it through the host's web routes.
:mod:`mcp_input_sync.web.forms` renders them as HTML and reads submitted
forms back. :mod:`mcp_input_sync.web.flask` is a Flask blueprint and
:mod:`mcp_input_sync.web.django` a Django app built on them.

Logging users in to servers protected by OAuth: :mod:`mcp_input_sync.web.logins`
(:class:`~mcp_input_sync.web.logins.Logins`, framework-neutral), the Flask
``login_blueprint`` and the Django ``login_urls``.

In the 2026-07-28 era, :meth:`PendingInputBroker.start_call` runs a call
where no thread waits: any process resumes it once the user has answered
(:class:`CallState` says where it stands).

Inside: :mod:`~mcp_input_sync.web.pending` holds the data types,
:mod:`~mcp_input_sync.web.broker` the in-memory store,
:mod:`~mcp_input_sync.web.handlers` the handlers and
:mod:`~mcp_input_sync.web.deferred` the deferred-call driver with the
:class:`~mcp_input_sync.web.deferred.Store` interface that every store
(in memory, :mod:`~mcp_input_sync.web.redis_broker`) implements.
"""

from __future__ import annotations

from .broker import PendingInputBroker
from .handlers import WebElicitationHandler, WebHandler
from .pending import ELICITATION_ACTIONS, SAMPLING_ACTIONS, CallState, InputNotFound, PendingInput, field_errors

__all__ = [
    "CallState",
    "ELICITATION_ACTIONS",
    "SAMPLING_ACTIONS",
    "InputNotFound",
    "PendingInput",
    "PendingInputBroker",
    "WebElicitationHandler",
    "WebHandler",
    "field_errors",
]

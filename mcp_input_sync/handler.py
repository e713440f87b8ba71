"""What the host writes: an :class:`InputHandler` subclass with plain methods.

The client advertises only the capabilities whose methods the subclass
overrides (docs/reference.md#capabilities): ``handle_sampling`` gives ``sampling``,
``handle_elicitation`` gives ``elicitation`` (with the modes of
:meth:`InputHandler.elicitation_modes`), ``list_roots`` gives ``roots`` (unless
:meth:`InputHandler.offers_roots` says no for this instance).
Every callback receives an :class:`InputContext`; callbacks block as long as
they like and watch ``ctx.cancelled`` to stop early.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar, Mapping, Optional, Sequence

__all__ = ["CancelToken", "InputContext", "InputHandler"]


class CancelToken:
    """A one-way cancellation flag shared by the library and one callback.

    The event behind :meth:`wait` is made on first use: most callbacks never
    wait on their token, and a flag costs less than an event per request.
    """

    __slots__ = ("_event", "_set", "reason")

    def __init__(self) -> None:
        self._event: Optional[threading.Event] = None
        self._set = False
        #: Why the token was set ("timeout", "cancelled", "closed", ...), or None.
        self.reason: Optional[str] = None

    def cancel(self, reason: str) -> None:
        """Set the token (idempotent: the first reason is kept)."""
        if self.reason is None:
            self.reason = reason
        self._set = True
        event = self._event
        if event is not None:
            event.set()

    @property
    def is_set(self) -> bool:
        """True once :meth:`cancel` has been called."""
        return self._set

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Block up to ``timeout`` real seconds (forever when None); True when set."""
        if self._set:
            return True
        event = self._event
        if event is None:
            with _TOKEN_LOCK:
                event = self._event
                if event is None:
                    event = self._event = threading.Event()
        if self._set:  # cancel() ran before the event existed
            event.set()
        return event.wait(timeout)


_TOKEN_LOCK = threading.Lock()
_UNSET_TOKEN = CancelToken()


class InputContext:
    """What a callback knows about the request it is answering (docs/index.md#the-context).

    Attributes that do not apply to a request are ``None``. The library builds one per
    request with the factory :meth:`for_request`; ``InputContext(...)`` with keywords
    builds the same object, for tests and tools.
    """

    # __init__ and for_request (the library's, once per request) each set every slot.
    __slots__ = (
        "client",
        "server_id",
        "era",
        "assigns",
        "related_request_id",
        "mode",
        "url",
        "host",
        "idn",
        "origin_mismatch",
        "server_origin",
        "_fields",
        "_form_fields",
        "_token",
    )

    def __init__(
        self,
        *,
        client: str,
        server_id: str,
        era: Optional[str],
        assigns: Optional[Mapping[str, Any]] = None,
        related_request_id: Any = None,
        mode: Optional[str] = None,
        url: Optional[str] = None,
        host: Optional[str] = None,
        idn: Optional[bool] = None,
        origin_mismatch: Optional[bool] = None,
        server_origin: Optional[str] = None,
        fields: Optional[Mapping[str, Any]] = None,
        token: Optional[CancelToken] = None,
    ) -> None:
        #: The client's ``name`` option.
        self.client = client
        #: The ``server_id`` option: which server is asking.
        self.server_id = server_id
        #: ``"legacy"`` or ``"modern"``.
        self.era = era
        #: The call's ``assigns`` for tied input, else the client's.
        self.assigns = assigns
        #: The id of the client call this input is tied to, or None.
        self.related_request_id = related_request_id
        #: ``"form"`` or ``"url"`` for elicitation, else None.
        self.mode = mode
        #: URL elicitation: the URL as sent.
        self.url = url
        #: URL elicitation: the lowercase A-label host.
        self.host = host
        #: URL elicitation: True when the host is internationalised.
        self.idn = idn
        #: URL elicitation: True unless the URL's origin is the server's.
        self.origin_mismatch = origin_mismatch
        #: URL elicitation: the server's origin the URL was compared with, or None when it has none (stdio).
        self.server_origin = server_origin
        self._fields = fields
        self._form_fields: Optional[Mapping[str, Mapping[str, Any]]] = None
        self._token = token if token is not None else _UNSET_TOKEN

    @classmethod
    def for_request(
        cls,
        client: str,
        server_id: str,
        era: Optional[str],
        assigns: Optional[Mapping[str, Any]],
        related_request_id: Any,
        mode: Optional[str],
        url: Any,
        form_fields: Optional[Mapping[str, Mapping[str, Any]]],
        token: Optional[CancelToken],
    ) -> "InputContext":
        """The context of one input request, built without ``__init__``'s keywords: the library's factory.

        The desk calls it once per request, so it takes its arguments by position and
        skips ``__init__`` (``object.__new__``, every slot set here). ``url`` is any object
        with the checked URL's facts as attributes (``url``, ``host``, ``idn``,
        ``origin_mismatch``, ``server_origin``), or None; ``form_fields`` is the compiled
        form's ``{name: facts}``, shared, not copied: :attr:`fields` copies it when first
        read, so a callback changing its copy changes no other request's. ``token`` None
        gives a context that is never cancelled. See docs/reference.md#inputcontextfor_request.
        """
        ctx: InputContext = object.__new__(cls)
        ctx.client = client
        ctx.server_id = server_id
        ctx.era = era
        ctx.assigns = assigns
        ctx.related_request_id = related_request_id
        ctx.mode = mode
        if url is None:
            ctx.url = ctx.host = ctx.idn = ctx.origin_mismatch = ctx.server_origin = None
        else:
            ctx.url = url.url
            ctx.host = url.host
            ctx.idn = url.idn
            ctx.origin_mismatch = url.origin_mismatch
            ctx.server_origin = url.server_origin
        ctx._fields = None
        ctx._form_fields = form_fields
        ctx._token = token if token is not None else _UNSET_TOKEN
        return ctx

    @property
    def fields(self) -> Optional[Mapping[str, Any]]:
        """Form elicitation: per-field facts, e.g. ``{"pin": {"sensitive_suspected": True}}``.

        This request's own copy, made when first read: a callback may change it.
        """
        fields = self._fields
        if fields is None and self._form_fields is not None:
            fields = self._fields = {name: dict(facts) for name, facts in self._form_fields.items()}
        return fields

    @fields.setter
    def fields(self, value: Optional[Mapping[str, Any]]) -> None:
        self._fields = value
        self._form_fields = None

    @property
    def cancelled(self) -> bool:
        """True once the library no longer wants this callback's answer."""
        return self._token.is_set

    def wait_cancelled(self, timeout: Optional[float] = None) -> bool:
        """Block up to ``timeout`` real seconds (forever when None) for cancellation.

        Returns:
            True when the request was cancelled, False when the wait timed out.
        """
        return self._token.wait(timeout)

    def __repr__(self) -> str:
        return (
            f"InputContext(client={self.client!r}, server_id={self.server_id!r}, era={self.era!r}, "
            f"related_request_id={self.related_request_id!r}, mode={self.mode!r})"
        )


class InputHandler:
    """Base class for the host's answers to a server's requests for input.

    Override only what the host supports; the client advertises exactly the
    overridden methods. Methods run on library threads and may block.
    """

    #: True: advertise ``sampling.tools`` (the handler can run tool loops).
    sampling_tools: ClassVar[bool] = False
    #: Modern-era rounds: how many input callbacks may run at once (1 to 16).
    input_parallelism: ClassVar[int] = 1

    def handle_sampling(self, params: dict[str, Any], ctx: InputContext) -> dict[str, Any]:
        """Answer ``sampling/createMessage`` with a ``CreateMessageResult`` dict.

        This method is the approval point: the library adds no approval step.
        """
        raise NotImplementedError

    def handle_elicitation(self, params: dict[str, Any], ctx: InputContext) -> dict[str, Any]:
        """Answer ``elicitation/create`` with an ``ElicitResult`` dict.

        A user who declines is a result: ``{"action": "decline"}``.
        """
        raise NotImplementedError

    def elicitation_modes(self) -> Sequence[str]:
        """The elicitation modes this handler supports: ``"form"`` and/or ``"url"``."""
        return ("form",)

    def list_roots(self, ctx: InputContext) -> dict[str, Any]:
        """Answer ``roots/list`` with a ``ListRootsResult`` dict (``{"roots": [...]}``)."""
        raise NotImplementedError

    def offers_roots(self) -> bool:
        """Whether this instance declares ``roots`` (default True): False withholds it though the class overrides ``list_roots``.

        Read at each handshake. Declaring none matters: a server such as
        server-filesystem replaces the folders it was started with by the
        client's roots, and keeps them when the client declares no ``roots``.
        """
        return True

    def handle_notification(self, method: str, params: dict[str, Any], ctx: InputContext) -> None:
        """Receive a server notification (on the notification thread, in order)."""

    def handle_log(self, entry: dict[str, Any], ctx: InputContext) -> None:
        """Receive a server log entry (``notifications/message`` params, sanitised)."""


def overrides(handler: Optional[InputHandler], name: str) -> bool:
    """True when ``handler``'s class overrides the base method ``name``, or the handler itself sets it.

    A callable set on the instance (``self.handle_sampling = sampler`` in
    ``__init__``) counts: it is what ``handler.handle_sampling`` calls.
    """
    if handler is None:
        return False
    if callable(getattr(handler, "__dict__", {}).get(name)):
        return True
    return getattr(type(handler), name, None) is not getattr(InputHandler, name)


def declares_roots(handler: Optional[InputHandler]) -> bool:
    """True when a client with ``handler`` declares ``roots``: it overrides ``list_roots`` and offers roots now."""
    return handler is not None and overrides(handler, "list_roots") and bool(handler.offers_roots())

"""Ways of getting the user's consent: the step of the flow where a person logs in.

A consent is an object with an ``application_type`` (``"native"`` or
``"web"``, sent when the client registers) and ``start()``, which returns a
*round*: its ``redirect_uri`` goes into the authorization request, its
``wait(url, fetcher)`` sends the user (or a robot) to ``url`` and returns the
query string the authorization server redirected back with, and ``close()``
frees what the round holds. Two ship here:

* :class:`Browser` for scripts and command lines: the system browser opens
  the authorization URL and a listener on ``127.0.0.1`` at a random port
  receives the redirect;
* :class:`Headless` for tests and automation: the authorization URL is
  fetched without following redirects and the ``Location`` is read.

A web app needs no consent object: it calls
:meth:`~mcp_input_sync.oauth.OAuth.begin` and
:meth:`~mcp_input_sync.oauth.OAuth.finish` from its own views.
"""

from __future__ import annotations

import hmac
import socketserver
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol, TextIO
from urllib.parse import parse_qsl, urlsplit

from .._protocol.oauth import OAuthRefused
from .._runtime import start_thread

if TYPE_CHECKING:
    from ._fetch import Fetcher

__all__ = ["Browser", "Consent", "ConsentRound", "Headless"]


class ConsentRound(Protocol):
    """One authorization's consent: where the redirect comes back, and the wait for it."""

    redirect_uri: str

    def wait(self, url: str, fetcher: "Fetcher") -> str: ...

    def close(self) -> None: ...


class Consent(Protocol):
    """A way of getting consent (see the module docstring)."""

    application_type: str

    def start(self) -> ConsentRound: ...


# ---------------------------------------------------------------------------- headless


class _HeadlessRound:
    def __init__(self, redirect_uri: str, answer: Optional[Callable[[str], str]]) -> None:
        self.redirect_uri = redirect_uri
        self._answer = answer

    def wait(self, url: str, fetcher: "Fetcher") -> str:
        if self._answer is not None:
            return _query_of(self._answer(url))
        location = fetcher.redirect_location(url)
        if location is None:
            raise OAuthRefused("consent", "The authorization endpoint did not redirect back.")
        return _query_of(location)

    def close(self) -> None:
        pass


class Headless:
    """Consent without a person: for tests, automation and the conformance client.

    By default ``wait`` fetches the authorization URL without following
    redirects and reads the authorization response from the ``Location``
    header (an authorization server that logs the client in at once, as test
    servers do). ``answer``, when given, is called with the authorization URL
    instead and returns the URL (or query string) the server redirected to.
    ``redirect_uri`` is registered and sent as is; nothing listens on it.
    """

    def __init__(self, redirect_uri: str = "http://127.0.0.1:3000/callback", *, answer: Optional[Callable[[str], str]] = None,
                 application_type: str = "native") -> None:
        self.redirect_uri = redirect_uri
        self.answer = answer
        self.application_type = application_type

    def __repr__(self) -> str:
        return f"Headless(redirect_uri={self.redirect_uri!r})"

    def start(self) -> ConsentRound:
        return _HeadlessRound(self.redirect_uri, self.answer)


def _query_of(url: str) -> str:
    """The query of a redirect URL (a bare query string is returned as it is)."""
    if not isinstance(url, str):
        raise OAuthRefused("consent", "The consent gave back no redirect.")
    return urlsplit(url).query if "://" in url else url.lstrip("?")


# ---------------------------------------------------------------------------- the system browser

_DONE_PAGE = (
    b"<!doctype html><html><head><meta charset='utf-8'><title>Logged in</title></head>"
    b"<body><h1>Done</h1><p>The login reached the application. You can close this window.</p></body></html>"
)


_MISMATCH_PAGE = (
    b"<!doctype html><html><head><meta charset='utf-8'><title>Login stopped</title></head>"
    b"<body><h1>Login stopped</h1><p>The authorization server sent the browser back with a state that does not match "
    b"the login the application started, so the application stopped waiting. Start the login again.</p></body></html>"
)

#: Said when a browser comes back with another login's state: the login ends at once.
STATE_MISMATCH = (
    "The browser came back from the authorization server with a state that does not match this login, so the login "
    "was stopped and no code was used. Start it again; if it happens again, the authorization server or a page open "
    "on this machine is sending a forged redirect."
)


class _Listener(ThreadingHTTPServer):
    """An HTTP server on the loopback interface that keeps the first redirect carrying the expected state.

    Each connection has its own daemon thread and a read timeout, so an idle
    connection (a browser's preconnect, a stray local process) holds up
    neither the real redirect nor :meth:`close`. A request to another path
    gets a 404. A request whose ``state`` is not the expected one gets a
    400; it ends the wait at once (``mismatch``) only when it is what an
    authorization server's redirect is: a browser's top-level navigation
    (``Sec-Fetch-Mode: navigate``, ``Sec-Fetch-Dest: document``) carrying a
    ``code`` or an ``error``. Any other one is ignored, so a script on the
    machine, or a page fetching the port in the background, cannot end the
    login; a page would have to open a window the user sees.
    """

    daemon_threads = True
    block_on_close = False

    def __init__(self, host: str, path: str) -> None:
        super().__init__((host, 0), _CallbackHandler)
        self.path = path
        self.expected_state: Optional[str] = None
        self.query: Optional[str] = None
        self.mismatch = False
        self.arrived = threading.Event()
        self._lock = threading.Lock()

    def server_bind(self) -> None:
        # HTTPServer.server_bind looks the host's name up (reverse DNS): not needed on loopback
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), int(self.server_address[1])

    def take(self, query: str, navigation: bool) -> bool:
        """Keep ``query`` if it is the awaited redirect; True when it was. A navigation that answers with
        another state ends the wait (``mismatch``) when nothing came before it."""
        expected = self.expected_state
        params = dict(parse_qsl(query, keep_blank_values=True))
        state = params.get("state")
        if expected is None:
            return False
        matches = state is not None and hmac.compare_digest(state.encode("utf-8", "replace"), expected.encode("utf-8"))
        with self._lock:  # one decision: the first redirect, right or mismatched, is the one
            if not matches:
                if navigation and ("code" in params or "error" in params) and not self.arrived.is_set():
                    self.mismatch = True
                    self.arrived.set()
                return False
            if not self.arrived.is_set():
                self.query = query
                self.arrived.set()
        return True


class _CallbackHandler(BaseHTTPRequestHandler):
    server: _Listener
    timeout = 5.0  # seconds an idle or slow connection may hold its thread

    def do_GET(self) -> None:  # noqa: N802 - the http.server name
        parts = urlsplit(self.path)
        if parts.path != self.server.path or not parts.query:
            self.send_error(404)
            return
        navigation = self.headers.get("Sec-Fetch-Mode") == "navigate" and self.headers.get("Sec-Fetch-Dest") == "document"
        if not self.server.take(parts.query, navigation):
            if self.server.mismatch and navigation:
                self._page(400, _MISMATCH_PAGE)
            else:
                self.send_error(400, "This is not the login this application is waiting for.")
            return
        self._page(200, _DONE_PAGE)

    def _page(self, status: int, page: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(page)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the http.server signature
        pass  # the query holds the code: never logged


class _BrowserRound:
    def __init__(self, owner: "Browser") -> None:
        self._owner = owner
        self._listener = _Listener(owner.host, owner.path)
        port = self._listener.server_address[1]
        self.redirect_uri = f"http://{owner.host}:{port}{owner.path}"
        self._thread = start_thread("oauth-callback", lambda: self._listener.serve_forever(poll_interval=0.1))

    def wait(self, url: str, fetcher: "Fetcher") -> str:
        owner = self._owner
        self._listener.expected_state = dict(parse_qsl(urlsplit(url).query)).get("state")
        if not owner.open_browser(url):
            if not owner.is_interactive():
                raise OAuthRefused(
                    "consent",
                    "A login is needed, but no browser could be opened and no one is at the terminal: "
                    "log in once where a browser can open (mcp-input-sync login URL), or give the client stored tokens.",
                )
            print(f"Open this address in a browser to log in:\n\n    {url}\n", file=owner.out, flush=True)
        else:
            print("A browser window was opened to log in; waiting for it (Ctrl-C cancels).", file=owner.out, flush=True)
        arrived = self._listener.arrived
        # short waits so that Ctrl-C reaches the main thread at once
        for _ in range(max(1, int(owner.timeout / 0.25))):
            if arrived.wait(0.25):
                break
        if self._listener.mismatch:
            raise OAuthRefused("state", STATE_MISMATCH)
        if not arrived.is_set() or self._listener.query is None:
            raise OAuthRefused("consent", f"No login came back within {owner.timeout:g} seconds.")
        return self._listener.query

    def close(self) -> None:
        self._listener.shutdown()  # the serving loop polls every 0.1 s; handlers run on their own threads
        self._listener.server_close()
        self._thread.join(5.0)


def _open_with_webbrowser(url: str) -> bool:
    import webbrowser

    try:
        return bool(webbrowser.open(url))
    except Exception:  # noqa: BLE001 - a broken $BROWSER is "could not open"
        return False


def _stdin_is_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):
        return False


class Browser:
    """Consent in the system browser, for scripts and command lines (``application_type`` native).

    ``start`` listens on ``host`` (``127.0.0.1``) at a random port, so the
    redirect URI is ``http://127.0.0.1:PORT/callback``; ``wait`` opens the
    authorization URL with :mod:`webbrowser` (which honours ``$BROWSER``),
    waits at most ``timeout`` seconds for the redirect, answers it with a page
    saying the window can be closed, and stops listening. Ctrl-C during the
    wait cancels cleanly. When no browser opens, the URL is printed for the
    user to open by hand if standard input is a terminal; otherwise (a cron
    job, CI) the login fails at once with an error that says how to log in.
    ``open_browser`` and ``interactive`` replace those two decisions (tests).
    When the browser comes back with a ``state`` that is not this login's
    (a top-level navigation carrying a ``code`` or an ``error``), the wait
    ends at once with an ``auth`` error, ``check="state"``, that says so.
    """

    application_type = "native"

    def __init__(
        self,
        *,
        timeout: float = 300.0,
        host: str = "127.0.0.1",
        path: str = "/callback",
        open_browser: Callable[[str], bool] = _open_with_webbrowser,
        interactive: Optional[Callable[[], bool]] = None,
        out: Optional[TextIO] = None,
    ) -> None:
        self.timeout = float(timeout)
        self.host = host
        self.path = path
        self.open_browser = open_browser
        self.is_interactive = interactive if interactive is not None else _stdin_is_terminal
        self.out = out if out is not None else sys.stderr

    def __repr__(self) -> str:
        return f"Browser(timeout={self.timeout:g}, host={self.host!r})"

    def start(self) -> ConsentRound:
        return _BrowserRound(self)

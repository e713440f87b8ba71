"""A stdio relay that holds the client's requests until the server says it has settled after ``initialized``.

Usage: ``python settled_relay.py PATTERN -- COMMAND [ARG...]``

It runs COMMAND and passes every line both ways unchanged, with one delay:
once the client has sent ``notifications/initialized``, the client's
requests wait until a line of the server's stderr matches PATTERN (a
regular expression): the server has finished what it does on
``initialized`` (server-filesystem asks for roots then, and says on stderr
what it decided). Responses and notifications are never held, so the
client's answer to the server's own ``roots/list`` gets through. A single
command-line call then sees the server as it stays, not as it was for the
first instant. It says ``relay: the server asked roots/list`` on stderr when
the server asks. Every wait is bounded: the client's timeout bounds the
held requests, and the relay gives the server 5 seconds to exit at the end.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from typing import Any

ASKED = "relay: the server asked roots/list"


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    settled = re.compile(argv[0])
    child = subprocess.Popen(argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    to_server, from_server, server_stderr = child.stdin, child.stdout, child.stderr
    lock = threading.Lock()
    state: dict[str, Any] = {"initialized": False, "settled": False, "held": []}

    def send(line: bytes) -> None:
        try:
            to_server.write(line)
            to_server.flush()
        except (BrokenPipeError, ValueError):
            pass

    def server_out() -> None:
        for line in iter(from_server.readline, b""):
            if _method(line) == "roots/list":
                sys.stderr.write(ASKED + "\n")
                sys.stderr.flush()
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()

    def server_err() -> None:
        for raw in iter(server_stderr.readline, b""):
            text = raw.decode("utf-8", "replace")
            sys.stderr.write(text)
            sys.stderr.flush()
            if settled.search(text):
                with lock:  # release the held requests in order, then let the next ones straight through
                    for held in state["held"]:
                        send(held)
                    state["held"], state["settled"] = [], True

    threads = [threading.Thread(target=server_out, daemon=True), threading.Thread(target=server_err, daemon=True)]
    for thread in threads:
        thread.start()
    for line in iter(sys.stdin.buffer.readline, b""):
        message = _message(line)
        with lock:
            if state["initialized"] and not state["settled"] and "method" in message and "id" in message:
                state["held"].append(line)
                continue
            if message.get("method") == "notifications/initialized":
                state["initialized"] = True
            send(line)
    try:
        to_server.close()
    except (BrokenPipeError, OSError):
        pass
    try:
        status = child.wait(5)
    except subprocess.TimeoutExpired:
        child.kill()
        status = child.wait()
    for thread in threads:
        thread.join(5)
    return status


def _message(line: bytes) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _method(line: bytes) -> Any:
    return _message(line).get("method")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

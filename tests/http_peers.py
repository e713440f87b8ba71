"""Starting HTTP peers on 127.0.0.1 for a test, with every wait bounded."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
from typing import Iterator, Optional

from .harness import PEERS_DIR


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_listening(port: int, process: "subprocess.Popen[bytes]", seconds: float = 20.0) -> None:
    pause = threading.Event()
    for _ in range(int(seconds / 0.05)):
        if process.poll() is not None:
            raise RuntimeError(f"the peer exited with {process.returncode} before listening")
        with socket.socket() as sock:
            sock.settimeout(0.2)
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        pause.wait(0.05)
    raise TimeoutError(f"nothing listened on 127.0.0.1:{port} within {seconds} s")


@contextlib.contextmanager
def http_peer(script: str, *args: str, python: str = sys.executable, seconds: float = 20.0) -> Iterator[str]:
    """Run ``tests/peers/<script> --http --port P`` (with ``python``) and yield its MCP endpoint URL."""
    port = free_port()
    process = subprocess.Popen(
        [python, str(PEERS_DIR / script), "--http", "--port", str(port), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(port, process, seconds)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate(timeout=5)


class PeerProcess:
    """A peer server over HTTP on a port of its own, stopped and started again at will (``start`` may run another command)."""

    def __init__(self, command: list[str], port: Optional[int] = None, env: Optional[dict[str, str]] = None) -> None:
        self.port = port or free_port()
        self.command = command
        self.env = env
        self.process: Optional[subprocess.Popen[bytes]] = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self, command: Optional[list[str]] = None) -> "PeerProcess":
        argv = [*(command or self.command), "--http", "--port", str(self.port)]
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=self.env)
        wait_listening(self.port, self.process, 30)
        return self

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.communicate(timeout=5)
            self.process = None

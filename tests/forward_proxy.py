"""A forward proxy on 127.0.0.1 that tunnels ``CONNECT`` (HTTPS through a proxy), for the ``proxies`` option's tests.

``ForwardProxy(hosts, password=...)``: a ``CONNECT host:port`` is tunnelled to
``hosts[host]`` (a name the machine cannot resolve reaches a local server
only through the proxy, which proves every request went through it) when it
carries ``Proxy-Authorization: Basic`` for ``user:password`` (407 otherwise);
any other request gets 405. ``tunnels`` counts the tunnels opened. Threads
are named ``proxy-*``; ``close()`` stops it within a bound.
"""

from __future__ import annotations

import base64
import socket
import threading
from typing import Optional

#: The longest request head read, in bytes.
_HEAD = 16 * 1024


class ForwardProxy:
    def __init__(self, hosts: dict[str, int], *, user: str = "proxy-user", password: Optional[str] = None) -> None:
        self.hosts = hosts
        self._auth = None if password is None else "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        self.tunnels = 0
        self.refused = 0
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port: int = self._listener.getsockname()[1]
        self._start(self._accept, "proxy-accept")

    def url(self, password: Optional[str] = None, user: str = "proxy-user") -> str:
        """The proxy's URL, with the credentials given (none by default)."""
        return f"http://{user}:{password}@127.0.0.1:{self.port}" if password is not None else f"http://127.0.0.1:{self.port}"

    def _start(self, target: object, name: str, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)  # type: ignore[arg-type]
        with self._lock:
            self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._listener.accept()
            except (socket.timeout, OSError):
                continue
            with self._lock:
                self._sockets.append(client)
            self._start(self._serve, "proxy-conn", client)

    def _serve(self, client: socket.socket) -> None:
        client.settimeout(10.0)
        head = b""
        try:
            while b"\r\n\r\n" not in head and len(head) < _HEAD:
                chunk = client.recv(4096)
                if not chunk:
                    return
                head += chunk
            lines = head.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
            verb, target, _ = lines[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
            if verb != "CONNECT":
                client.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            if self._auth is not None and headers.get("proxy-authorization") != self._auth:
                with self._lock:
                    self.refused += 1
                client.sendall(b'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm="test"\r\nContent-Length: 0\r\n\r\n')
                return
            host, _, port = target.rpartition(":")
            upstream = socket.create_connection(("127.0.0.1", self.hosts.get(host, int(port))), timeout=10.0)
        except (OSError, ValueError):
            client.close()
            return
        with self._lock:
            self.tunnels += 1
            self._sockets.append(upstream)
        client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        self._start(self._pipe, "proxy-pipe", upstream, client)
        self._pipe(client, upstream)

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        source.settimeout(0.5)
        try:
            while not self._closing.is_set():
                try:
                    data = source.recv(65536)
                except socket.timeout:
                    continue
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self._closing.set()
        self._listener.close()
        with self._lock:
            sockets, threads = list(self._sockets), list(self._threads)
        for sock in sockets:
            try:
                sock.close()
            except OSError:
                pass
        for thread in threads:
            thread.join(5.0)

    def __enter__(self) -> "ForwardProxy":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

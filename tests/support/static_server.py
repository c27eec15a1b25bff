"""A tiny HTTP server on loopback serving fixed routes: bodies, redirects, errors (for fetch tests)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

#: a route answers (status, headers, body)
Route = tuple[int, dict[str, str], bytes]


@contextmanager
def serving(routes: dict[str, Route], host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """``http://127.0.0.1:PORT`` while the server runs (``host`` "::1": ``http://[::1]:PORT``); unknown
    paths are 404."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, headers, body = routes.get(self.path, (404, {}, b"not here"))
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    server_class = type("Server", (ThreadingHTTPServer,), {"address_family": family})
    server = server_class((host, port), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    try:
        yield f"http://{shown}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()

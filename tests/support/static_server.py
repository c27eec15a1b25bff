"""A tiny HTTP server on loopback serving fixed routes: bodies, redirects, errors (for fetch tests)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

#: a route answers (status, headers, body)
Route = tuple[int, dict[str, str], bytes]


@contextmanager
def serving(routes: dict[str, Route]) -> Iterator[str]:
    """``http://127.0.0.1:PORT`` while the server runs; unknown paths are 404."""

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

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()

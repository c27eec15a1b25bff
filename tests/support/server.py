"""`drsg serve` in a subprocess for tests, spoken to over real HTTP: :func:`start_server` starts one
and waits until it answers /health; :class:`RunningServer` calls it (JSON-RPC with the token, plain
HTTP) and stops it; :func:`cli` runs `drsg` in a subprocess beside it."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "tests" / "data" / "ai_native_en.txt"
TOKEN = "test-token-0123456789abcdef"
_DEFAULT = object()


def drsg_argv() -> list[str]:
    return [sys.executable, "-m", "drsg.surfaces.cli"]


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRSG_")}
    env.update(extra)
    return env


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class RunningServer:
    proc: subprocess.Popen[bytes]
    host: str
    port: int
    token: str | None
    db: Path
    log_path: Path
    out_path: Path
    tls: ssl.SSLContext | None = None  # the client side of an HTTPS server: the CA it pins

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    def connect(self, timeout: float) -> http.client.HTTPConnection:
        if self.tls is not None:
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=self.tls)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def post(
        self, body: bytes | str, *, token: Any = _DEFAULT, headers: dict[str, str] | None = None, path: str = "/rpc"
    ) -> Response:
        token = self.token if token is _DEFAULT else token
        sent = {"Content-Type": "application/json", **(headers or {})}
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        return self.request("POST", path, body.encode() if isinstance(body, str) else body, sent)

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = 60,
    ) -> Response:
        conn = self.connect(timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            return Response(resp.status, dict(resp.getheaders()), resp.read())
        finally:
            conn.close()

    def listening(self) -> bool:
        """Whether the port still takes connections."""
        try:
            socket.create_connection((self.host, self.port), timeout=5).close()
        except OSError:
            return False
        return True

    def get(self, path: str) -> Response:
        return self.request("GET", path, timeout=30)

    def rpc(self, method: str, params: Any = None, *, rid: Any = 1, token: Any = _DEFAULT) -> dict[str, Any]:
        request: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            request["params"] = params
        resp = self.post(json.dumps(request), token=token)
        assert resp.status in (200, 401), (resp.status, resp.body)
        return resp.json()  # type: ignore[no-any-return]

    def call(self, method: str, params: Any = None) -> Any:
        answer = self.rpc(method, params)
        assert "error" not in answer, f"{method} {params}: {answer['error']}"
        return answer["result"]

    def error(self, method: str, params: Any = None) -> dict[str, Any]:
        answer = self.rpc(method, params)
        assert "result" not in answer, f"{method} {params} should fail but gave {answer['result']}"
        return answer["error"]  # type: ignore[no-any-return]

    def head(self) -> int:
        return int(self.call("db.stats")["commit_seq"])

    def logs(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log_path.read_text().splitlines() if line.strip()]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout)


def start_server(
    db: Path,
    workdir: Path,
    *,
    token: str | None = TOKEN,
    addr: str = "127.0.0.1:0",
    env: dict[str, str] | None = None,
    name: str = "server",
    args: Sequence[str] = (),
    tls: ssl.SSLContext | None = None,
) -> RunningServer:
    """`drsg serve` in a subprocess (``args`` after `serve`), once it answers /health; ``tls`` is
    the client context for a server configured to speak HTTPS."""
    extra = dict(env or {})
    if token is not None:
        extra["DRSG_TOKEN"] = token
    log_path, out_path = workdir / f"{name}.log", workdir / f"{name}.out"
    with log_path.open("w") as err, out_path.open("w") as out:
        proc = subprocess.Popen(
            [*drsg_argv(), "--db", str(db), "serve", "--addr", addr, *args],
            stdout=out,
            stderr=err,
            env=clean_env(**extra),
            cwd=workdir,
        )
    deadline = time.monotonic() + 60
    line = ""
    while time.monotonic() < deadline:
        line = out_path.read_text()
        if "serving" in line or proc.poll() is not None:
            break
        time.sleep(0.02)
    if "serving" not in line:
        proc.kill()
        raise AssertionError(f"server did not start: {line!r} {log_path.read_text()[-2000:]}")
    # "serving graph.drsg on http://127.0.0.1:PORT (JSON-RPC at /rpc)", https:// with TLS
    scheme, hostport = next(word for word in line.split() if "://" in word).split("://", 1)
    assert scheme == ("https" if tls else "http"), line
    host, port = hostport.rsplit(":", 1)
    server = RunningServer(proc, host, int(port), token, db, log_path, out_path, tls)
    while time.monotonic() < deadline:
        try:
            if server.get("/health").status == 200:
                return server
        except OSError:
            time.sleep(0.02)
    raise AssertionError("/health never answered")


def cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*drsg_argv(), "--db", str(db), *args], capture_output=True, text=True, env=clean_env(), timeout=120
    )


def paragraphs(count: int) -> list[str]:
    return [p.strip() for p in SEED.read_text().split("\n\n") if len(p.strip()) > 80][:count]

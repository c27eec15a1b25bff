"""`drsg serve`'s `[server]` settings that docs/reference/settings.md promises, each against a real server process:
`query_timeout_secs` (-32000), `max_concurrent` (the call past it waits its turn),
`shutdown_timeout_secs` (on SIGTERM the call in flight finishes, then the server exits), `tls`
(HTTPS with the configured certificate) and `allowed_origins` (that origin gets in, with the CORS
headers a browser needs; another does not).

A call is kept in flight without any sleep: a text search makes the server embed its query with the
operator's remote embedder — here the scripted OpenAI-compatible server — which holds its answer
until the test releases it. When the embedding request arrives, the test knows the call is inside
the server, holding whatever a call holds.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import signal
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from drsg.surfaces.server.state import READ_THREADS
from tests.support.fake_openai import FakeOpenAI, Reply, Request, embeddings_body
from tests.support.server import RunningServer, cli, start_server
from tests.support.waiting import wait_until

DIMS = 8
STATS = '{"jsonrpc":"2.0","id":1,"method":"db.stats"}'
TEXT_SEARCH = {"plane": "docs", "property": "v", "query": "held at the embedder", "k": 2}


class HeldEmbedder:
    """The scripted embedding service, answering only once :attr:`release` is set."""

    def __init__(self, fake: FakeOpenAI) -> None:
        self.fake = fake
        self.release = threading.Event()
        fake.on("/embeddings", self._answer)

    def _answer(self, request: Request) -> Reply:
        self.release.wait(120)  # bounded: a failing test must not leave the fake hanging for ever
        return Reply(json=embeddings_body(request, DIMS))

    def wait_for(self, count: int) -> None:
        """Until ``count`` embedding requests have arrived: that many searches are inside the server."""
        wait_until(lambda: len(self.fake.requests_to("/embeddings")) >= count, f"{count} embedding request(s)")


class InFlight:
    """One call made on its own thread; :attr:`done` is set when its answer (or failure) is in."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self.done = threading.Event()
        self.answer: Any = None
        self.failure: BaseException | None = None
        threading.Thread(target=self._run, args=(call,), daemon=True).start()

    def _run(self, call: Callable[[], Any]) -> None:
        try:
            self.answer = call()
        except BaseException as exc:  # reported by result()
            self.failure = exc
        finally:
            self.done.set()

    def result(self, timeout: float = 60) -> Any:
        assert self.done.wait(timeout), f"no answer within {timeout:g} s"
        if self.failure is not None:
            raise self.failure
        return self.answer


@pytest.fixture
def held() -> Iterator[HeldEmbedder]:
    with FakeOpenAI(dims=DIMS) as fake:
        embedder = HeldEmbedder(fake)
        try:
            yield embedder
        finally:
            embedder.release.set()


Serve = Callable[..., RunningServer]


@pytest.fixture
def held_server(tmp_path: Path, held: HeldEmbedder) -> Iterator[Serve]:
    """Starts servers whose text queries ``held`` embeds, each with a plane of three 8-dim nodes;
    afterwards releases the embedder and stops whatever still runs."""
    started: list[RunningServer] = []

    def start(name: str, **env: str) -> RunningServer:
        running = start_server(
            tmp_path / f"{name}.drsg",
            tmp_path,
            name=name,
            env=env,
            args=["--embed", held.fake.base_url, "--embed-model", "held-embedding"],
        )
        started.append(running)
        running.call("plane.create", {"name": "docs"})
        for i in range(3):
            vector = [1.0 if d == i else 0.0 for d in range(DIMS)]
            running.call("node.create", {"plane": "docs", "key": f"d{i}", "properties": {"v": {"$vector": vector}}})
        return running

    yield start
    held.release.set()
    for running in started:
        running.stop()


def logged(running: RunningServer, event: str) -> dict[str, Any] | None:
    """The server's first log line for ``event`` so far (a line still being written is skipped)."""
    for line in running.log_path.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if record.get("event") == event:
            return record  # type: ignore[no-any-return]
    return None


# --------------------------------------------------------------------------- time and load limits


def test_a_read_past_query_timeout_secs_answers_32000(held: HeldEmbedder, held_server: Serve) -> None:
    running = held_server("timeout", DRSG_SERVER_QUERY_TIMEOUT_SECS="2")
    started = time.monotonic()
    slow = InFlight(lambda: running.rpc("plane.search", TEXT_SEARCH))
    error = slow.result()["error"]  # the embedder still holds its answer: only the timeout ends it
    assert time.monotonic() - started >= 2
    assert error["code"] == -32000 and error["data"] == {"error": "QueryTimeout"}
    assert "query_timeout_secs (2 s)" in error["message"]
    vector = [0.0, 1.0, *[0.0] * (DIMS - 2)]
    quick = running.call("plane.search", {**TEXT_SEARCH, "query": vector})  # a read within the limit
    assert quick[0]["external_key"] == "d1"
    held.release.set()
    assert len(running.call("plane.search", TEXT_SEARCH)) == 2  # the embedder answers now: so does the query
    assert running.stop() == 0


def test_a_cypher_read_past_query_timeout_secs_answers_32000_too(held: HeldEmbedder, held_server: Serve) -> None:
    running = held_server("cypher", DRSG_SERVER_QUERY_TIMEOUT_SECS="2")
    near = {"plane": "docs", "query": 'SEARCH (d) ON v NEAR "held at the embedder" TOPK 2 RETURN key(d) AS k'}
    error = InFlight(lambda: running.rpc("plane.cypher", near)).result()["error"]
    assert error["code"] == -32000 and error["data"] == {"error": "QueryTimeout"}
    held.release.set()
    answer = running.call("plane.cypher", near)  # the text NEAR, embedded by the operator's embedder
    assert answer["count"] == 2 and len(held.fake.requests_to("/embeddings")) == 2
    assert running.stop() == 0


def test_the_call_past_max_concurrent_waits_its_turn(held: HeldEmbedder, held_server: Serve) -> None:
    running = held_server("concurrent", DRSG_SERVER_MAX_CONCURRENT="2")
    first = InFlight(lambda: running.rpc("plane.search", TEXT_SEARCH))
    held.wait_for(1)
    assert "result" in running.rpc("db.stats")  # one of the two slots is taken: the other serves at once
    second = InFlight(lambda: running.rpc("plane.search", TEXT_SEARCH))
    held.wait_for(2)
    third = InFlight(lambda: running.rpc("db.stats"))
    assert not third.done.wait(1.0), "a third call ran while two calls held both slots"
    held.release.set()
    assert first.result()["result"] == second.result()["result"]  # the same query, answered in full
    assert third.result()["result"]["planes"] == 2
    assert running.stop() == 0


def test_sigterm_lets_the_call_in_flight_finish_then_exits(held: HeldEmbedder, held_server: Serve) -> None:
    running = held_server("graceful", DRSG_SERVER_SHUTDOWN_TIMEOUT_SECS="60")
    call = InFlight(lambda: running.rpc("plane.search", TEXT_SEARCH))
    held.wait_for(1)
    running.proc.send_signal(signal.SIGTERM)
    stopping = wait_until(lambda: logged(running, "stopping"), "the server to log that it is stopping")
    assert stopping["in_flight"] == 1
    wait_until(lambda: not running.listening(), "the server to stop listening")
    assert not call.done.wait(1.0), "the call in flight was cut off long before shutdown_timeout_secs"
    assert running.proc.poll() is None  # still waiting for it
    held.release.set()
    assert len(call.result()["result"]) == 2  # answered in full
    assert running.proc.wait(60) == 0
    assert logged(running, "stopped") is not None


def test_a_call_outlasting_shutdown_timeout_secs_is_cut_off(held: HeldEmbedder, held_server: Serve) -> None:
    running = held_server("impatient", DRSG_SERVER_SHUTDOWN_TIMEOUT_SECS="1")
    call = InFlight(lambda: running.rpc("plane.search", TEXT_SEARCH))
    held.wait_for(1)
    signalled = time.monotonic()
    running.proc.send_signal(signal.SIGTERM)
    code = running.proc.wait(30)  # the embedder still holds the call: only the timeout lets the server go
    assert time.monotonic() - signalled >= 1
    assert code == 0 and logged(running, "stopped") is not None
    assert call.done.wait(30) and call.failure is not None  # its connection closed without an answer


# --------------------------------------------------------------------------- TLS


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by its own key (PEM files), valid for a day."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "drsg test server")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


def test_server_tls_serves_https_with_the_configured_certificate(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    (tmp_path / "drsg.toml").write_text(f'[server]\ntls = {{ cert = "{cert}", key = "{key}" }}\n')
    pinned = ssl.create_default_context(cafile=str(cert))  # trusts this certificate and nothing else
    running = start_server(tmp_path / "g.drsg", tmp_path, name="tls", tls=pinned)
    try:
        assert running.url.startswith("https://127.0.0.1:")
        assert running.call("db.stats")["planes"] == 1
        with (
            socket.create_connection((running.host, running.port), timeout=10) as raw,
            pinned.wrap_socket(raw, server_hostname=running.host) as tls,
        ):
            presented = tls.getpeercert(binary_form=True)
        assert presented == ssl.PEM_cert_to_DER_cert(cert.read_text())
        plain = http.client.HTTPConnection(running.host, running.port, timeout=10)
        with pytest.raises((OSError, http.client.HTTPException)):  # plain HTTP gets no answer
            plain.request("POST", "/rpc", body=STATS, headers={"Authorization": f"Bearer {running.token}"})
            plain.getresponse().read()
        plain.close()
    finally:
        assert running.stop() == 0

    (tmp_path / "drsg.toml").write_text(f'[server]\ntls = {{ cert = "{tmp_path / "nope.pem"}", key = "{key}" }}\n')
    ran = cli(tmp_path / "fresh.drsg", "--config", str(tmp_path / "drsg.toml"), "serve", "--addr", "127.0.0.1:0")
    errors = [line for line in ran.stderr.splitlines() if line.startswith("error:")]  # the rest: JSON log lines
    assert ran.returncode == 2 and len(errors) == 1, ran.stderr
    assert errors[0].startswith("error: cannot load [server.tls] cert/key: ") and "No such file" in errors[0]
    assert not (tmp_path / "fresh.drsg").exists()  # a failed start writes nothing


# --------------------------------------------------------------------------- browser origins


PREFLIGHT = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type"}


def test_allowed_origins_get_in_with_cors_headers_and_others_do_not(tmp_path: Path) -> None:
    env = {"DRSG_ALLOWED_ORIGINS": "https://app.example, http://localhost:5173/"}
    running = start_server(tmp_path / "g.drsg", tmp_path, name="origins", env=env)
    try:
        for origin in ("https://app.example", "http://localhost:5173"):
            # The browser first asks whether it may send a JSON POST with a token (a preflight).
            asked = running.request("OPTIONS", "/rpc", headers={"Origin": origin, **PREFLIGHT})
            assert asked.status in (200, 204), (origin, asked.status, asked.body)
            assert asked.headers["Access-Control-Allow-Origin"] == origin
            assert "POST" in asked.headers["Access-Control-Allow-Methods"]
            allowed_headers = asked.headers["Access-Control-Allow-Headers"].lower()
            assert "authorization" in allowed_headers and "content-type" in allowed_headers
            answered = running.post(STATS, headers={"Origin": origin})
            assert answered.status == 200 and answered.json()["result"]["planes"] == 1, origin
            assert answered.headers["Access-Control-Allow-Origin"] == origin  # the page may read the answer
        for origin in ("https://evil.example", "https://app.example.evil", "http://localhost:5174"):
            refused = running.post(STATS, headers={"Origin": origin})
            assert refused.status == 403 and refused.json()["error"]["code"] == -32001, origin
            assert "Access-Control-Allow-Origin" not in refused.headers
            asked = running.request("OPTIONS", "/rpc", headers={"Origin": origin, **PREFLIGHT})
            assert asked.status == 403 and "Access-Control-Allow-Origin" not in asked.headers, origin
        plain = running.post(STATS)  # no Origin: not a browser, no CORS headers
        assert plain.status == 200 and "Access-Control-Allow-Origin" not in plain.headers
    finally:
        assert running.stop() == 0

    (tmp_path / "drsg.toml").write_text('[server]\nallowed_origins = ["https://app.example"]\n')  # the list form
    listed = start_server(tmp_path / "g.drsg", tmp_path, name="listed")
    try:
        assert listed.post(STATS, headers={"Origin": "https://app.example"}).status == 200
        assert listed.post(STATS, headers={"Origin": "http://localhost:5173"}).status == 403
    finally:
        assert listed.stop() == 0


def test_health_is_unavailable_while_every_read_thread_is_stuck(held: HeldEmbedder, held_server: Serve) -> None:
    running = held_server("stuck")
    health = running.get("/health")
    assert health.status == 200 and health.json()["status"] == "ok"
    calls = [InFlight(lambda: running.rpc("plane.search", TEXT_SEARCH)) for _ in range(READ_THREADS)]
    wait_until(lambda: running.get("/health").status == 503, "/health to see the read pool stuck", timeout=30)
    stuck = running.get("/health").json()
    assert stuck["status"] == "unavailable" and stuck["reads"]["failing"] is True
    assert stuck["reads"]["running"] == READ_THREADS
    held.release.set()
    for call in calls:
        call.result()
    wait_until(lambda: running.get("/health").status == 200, "/health to see the read pool answer again")
    assert running.get("/health").json()["reads"] == {"threads": READ_THREADS, "running": 0, "failing": False}

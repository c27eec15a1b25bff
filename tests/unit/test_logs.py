"""drsg's logging set-up (kernel/logs.py): structlog loads without rich, and a console line with an
exception still renders exactly as structlog's own default console renderer draws it with rich.

Each check runs in a fresh interpreter: which modules an import loads is the point.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import structlog
import structlog.testing
from click.testing import CliRunner

from drsg.kernel import logs
from drsg.surfaces.cli.main import cli


def _run(probe: str) -> str:
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_importing_the_logging_set_up_loads_structlog_but_not_rich() -> None:
    probe = "import sys\nimport drsg.kernel.logs\nprint(sorted(m for m in ('rich', 'structlog') if m in sys.modules))"
    assert _run(probe).strip() == "['structlog']"


def test_rich_stays_importable_afterwards() -> None:
    probe = "import drsg.kernel.logs\nimport rich.console\nprint(rich.console.Console.__name__)"
    assert _run(probe).strip() == "Console"


# the same lines in both probes, after a first line that differs, so the traceback's line numbers match
_RENDER = """
def fail(depth):
    secret_free_local = depth * 2
    if depth == 0:
        raise ValueError("boom")
    fail(depth - 1)
def caught():  # the traceback starts here: no module frame, whose globals differ between the probes
    try:
        fail(2)
    except ValueError:
        return sys.exc_info()
print(renderer(None, "error", {"event": "it failed", "exc_info": caught()}))
print(sorted(m for m in ("rich",) if m in sys.modules))
"""
# structlog as it comes: imported with rich, its console renderer's default formatter
_STOCK = "import sys, structlog; renderer = structlog.dev.ConsoleRenderer(colors=False)"
# drsg's: configured for a console, its renderer the last processor
_DRSG = (
    "import sys, structlog; from drsg.kernel import logs; logs.configure('debug', 'console'); "
    "renderer = structlog.get_config()['processors'][-1]"
)


def test_a_console_exception_renders_as_structlogs_default_with_rich() -> None:
    stock, ours = _run(_STOCK + _RENDER), _run(_DRSG + _RENDER)
    assert "ValueError: boom" in stock and "secret_free_local" in stock  # rich's traceback, with locals
    assert stock.splitlines()[-1] == ours.splitlines()[-1] == "['rich']"  # rich loaded by the exception
    assert ours == stock


def test_without_rich_a_console_exception_renders_as_structlogs_plain_default() -> None:
    missing = "import sys; sys.modules['rich'] = None  # as if rich were not installed\n"
    stock, ours = _run(missing + _STOCK + _RENDER), _run(missing + _DRSG + _RENDER)
    assert "ValueError: boom" in stock and "secret_free_local" not in stock  # the plain traceback
    assert ours == stock


def test_an_in_process_command_leaves_logging_as_it_found_it(tmp_path: Path) -> None:
    """`drsg` run inside another program (CliRunner here) sets its level (warning) for the command
    only: an info event logged afterwards is captured, and a configuration made before comes back."""
    restore = logs.saved()  # (this test's own: whatever the tests before it set up)
    structlog.reset_defaults()
    try:
        assert CliRunner().invoke(cli, ["--db", str(tmp_path / "g.drsg"), "config"]).exit_code == 0
        assert not structlog.is_configured()
        with structlog.testing.capture_logs() as captured:
            structlog.get_logger("drsg.test").info("after the command")
        assert [event["event"] for event in captured] == ["after the command"]

        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
        before = structlog.get_config()
        assert CliRunner().invoke(cli, ["--db", str(tmp_path / "g.drsg"), "-v", "config"]).exit_code == 0
        assert structlog.get_config() == before
    finally:
        restore()


def test_a_json_line_carries_the_traceback_of_a_logged_exception() -> None:
    """A server's JSON log line for a failure names where it failed (it said only ``exc_info: true``)."""
    probe = (
        "import structlog; from drsg.kernel import logs; logs.configure('info', 'json')\n"
        "def feed():\n    raise RuntimeError('the feed broke')\n"
        "try:\n    feed()\nexcept RuntimeError:\n    structlog.get_logger('t').exception('feed watch failed')\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    line = json.loads(done.stderr.strip().splitlines()[-1])
    assert line["event"] == "feed watch failed" and "exc_info" not in line
    assert "in feed" in line["exception"] and "RuntimeError: the feed broke" in line["exception"]

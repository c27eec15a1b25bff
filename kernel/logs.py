"""structlog set-up: readable lines on a terminal, JSON lines elsewhere (e.g. under `serve`).

structlog's import loads rich, when installed, to choose its console's traceback formatter: ≈0.1 s
of every command's start, for a line that carries an exception; asyncio (≈0.02 s), for its async
log methods, which drsg never calls on a one-shot command; and greenlet (≈5 ms) for its deprecated
thread-local context (structlog.threadlocal), which drsg never uses. This module imports structlog
with rich and greenlet hidden and asyncio deferred to its first use (kernel/imports.py), and gives
the console renderer the formatter structlog would have chosen, made on the first exception it
renders: the same output, paid for only when there is a traceback to draw.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import sys
from collections.abc import Callable
from typing import TextIO

from drsg.kernel import imports

imports.lean("structlog", hide=("rich", "greenlet"), defer=("asyncio",))

import structlog  # noqa: E402  # after the import above, which is what makes this one cheap
from structlog.typing import ExceptionRenderer, ExcInfo  # noqa: E402

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


@functools.cache
def _stock_console_formatter() -> ExceptionRenderer:
    """structlog.dev's default for a console without colours, chosen as its import chooses it (rich's
    monochrome traceback when rich is installed, else the plain one): by a private copy of the module
    run now, as the one in sys.modules ran with rich hidden."""
    spec = importlib.util.find_spec("structlog.dev")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    formatter: ExceptionRenderer = module.default_monochrome_exception_formatter
    return formatter


def console_traceback(sio: TextIO, exc_info: ExcInfo) -> None:
    """The console renderer's exception formatter: structlog's stock one, made on first use."""
    _stock_console_formatter()(sio, exc_info)


def saved() -> Callable[[], None]:
    """A way back to structlog's configuration as it is now, unconfigured included: what a command
    run inside another program (a test, an embedding app) restores when it returns, so its level
    filter does not outlive it."""
    if not structlog.is_configured():
        return structlog.reset_defaults
    before = structlog.get_config()
    return lambda: structlog.configure(**before)


def configure(level: str = "warning", fmt: str = "auto") -> None:
    use_json = fmt == "json" or (fmt == "auto" and not sys.stderr.isatty())
    # a JSON line carries its traceback as text in "exception" (the console renderer draws its own)
    renderers: list[structlog.types.Processor] = (
        [structlog.processors.format_exc_info, structlog.processors.JSONRenderer()]
        if use_json
        else [structlog.dev.ConsoleRenderer(colors=False, exception_formatter=console_traceback)]
    )
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            *renderers,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS.get(level.lower(), logging.WARNING)),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )

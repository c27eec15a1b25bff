"""The handlers a digest routes to: installed parser plugins first, then the built-in ones.

An installed plugin claiming an extension wins over a built-in handler claiming it too, so a user
can replace the Python handler with upstream's plugin. Routing reads what the registry recorded; a
plugin is loaded and verified only when a file routes to it, and one that fails then (its file
changed, a forbidden import) stops the digest with an error naming it: it is never skipped. A
tampered plugin therefore blocks the trees that hold its files, not every digest.
"""

from __future__ import annotations

from drsg.kernel.settings import Settings
from drsg.pipeline.code.handler import Handler, Options
from drsg.pipeline.code.python_handler import VOCABULARY, PythonHandler
from drsg.pipeline.plugins.host import plugin_options as _table_options

#: what each built-in handler emits, for `drsg plugin show NAME`
BUILTIN_VOCABULARY = {"py": VOCABULARY}


def builtin_handlers() -> list[Handler]:
    return [PythonHandler()]


def load_handlers(settings: Settings | None = None) -> list[Handler]:
    """Every handler in routing order (without settings: the built-in ones)."""
    handlers: list[Handler] = []
    if settings is not None:
        from drsg.pipeline.plugins.registry import Registry

        handlers = Registry.from_settings(settings).pending()
    return [*handlers, *builtin_handlers()]


def plugin_options(settings: Settings | None, name: str) -> Options:
    """A handler's ``[plugins.<name>]`` table as the string pairs it receives."""
    return _table_options(settings, name) if settings is not None else ()

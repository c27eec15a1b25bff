"""The handlers a digest routes to: installed parser plugins first, then the built-in ones.

An installed plugin claiming an extension wins over a built-in handler claiming it too, so a user
can replace the Python handler with upstream's plugin. Routing reads what the registry recorded; a
plugin is loaded and verified only when a file routes to it, and one that fails then (its file
changed, a forbidden import) stops the digest with an error naming it: it is never skipped. A
tampered plugin therefore blocks the trees that hold its files, not every digest.

The code side (``drsg.pipeline.code``) defines the Handler port and the built-in handlers and knows
nothing of plugins; this package implements the port and puts both in routing order.
"""

from __future__ import annotations

from drsg.kernel.settings import Settings
from drsg.pipeline.code.handler import Handler
from drsg.pipeline.code.handlers import builtin_handlers
from drsg.pipeline.plugins.registry import Registry


def load_handlers(settings: Settings | None = None) -> list[Handler]:
    """Every handler in routing order (without settings: the built-in ones)."""
    installed = Registry.from_settings(settings).pending() if settings is not None else []
    return [*installed, *builtin_handlers()]

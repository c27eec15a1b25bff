"""The handlers a digest routes to: installed parser plugins first, then the built-in ones."""

from __future__ import annotations

from drsg.kernel.settings import Settings
from drsg.pipeline.code.handler import Handler
from drsg.pipeline.code.python_handler import PythonHandler


def builtin_handlers() -> list[Handler]:
    return [PythonHandler()]


def load_handlers(settings: Settings | None = None) -> list[Handler]:
    """Every handler in routing order: an installed plugin claiming an extension wins over a built-in."""
    return builtin_handlers()


def plugin_options(settings: Settings | None, name: str) -> tuple[tuple[str, str], ...]:
    """A handler's ``[plugins.<name>]`` table as string pairs, in the table's order (TOML booleans lowercase)."""
    table = settings.plugin_tables.get(name, {}) if settings is not None else {}
    return tuple((key, _text(value)) for key, value in table.items())


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)

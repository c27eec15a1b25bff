"""Importing a third-party library without the modules it loads for a feature drsg never uses.

A one-shot command's start is mostly imports (issue #37: a CLI read within 0.3 s). Some libraries
import an optional extra at their own import whatever the caller needs: structlog loads rich to pick
a traceback formatter and asyncio for its async log methods; lark loads ``regex`` for grammars with
Unicode categories and its ``regex=True`` option. :func:`lean` imports such a library with an extra
hidden (the import fails, the library takes its fallback) or deferred (a stand-in that imports the
module on first use). Nothing changes when the library or the extra is loaded already, and every
extra stays importable.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType


def lean(name: str, *, hide: tuple[str, ...] = (), defer: tuple[str, ...] = ()) -> ModuleType:
    """``import name`` with ``import extra`` failing for each extra in ``hide`` meanwhile, and each in
    ``defer`` given to it as a stand-in that imports the real module on its first attribute use (only
    for a library whose import binds the name and uses it in functions alone). Once ``name`` is
    loaded, the next ``import extra`` loads the real one."""
    if name in sys.modules:
        return sys.modules[name]
    hidden = [extra for extra in hide if extra not in sys.modules]  # one loaded already stays usable
    stand_ins = [_Deferred(extra) for extra in defer if extra not in sys.modules]
    for extra in hidden:
        sys.modules[extra] = None  # type: ignore[assignment]  # None in sys.modules makes `import extra` fail
    for stand_in in stand_ins:
        sys.modules[stand_in.__name__] = stand_in
    try:
        return importlib.import_module(name)
    finally:
        for extra in hidden:
            if extra in sys.modules and sys.modules[extra] is None:
                del sys.modules[extra]
        for stand_in in stand_ins:
            stand_in.release()


class _Deferred(ModuleType):
    """A module's stand-in: any attribute it lacks is the real module's, imported then."""

    def release(self) -> None:
        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]

    def __getattr__(self, attr: str) -> object:
        self.release()  # used while the library still loads: the real module, from now on
        return getattr(importlib.import_module(self.__name__), attr)

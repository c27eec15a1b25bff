"""The built-in handlers, and what each emits (``drsg plugin show NAME``).

Installed parser plugins implement the same Handler port (``handler.py``) in
``drsg.pipeline.plugins``, which also puts them and these in routing order (``plugins/handlers.py``):
this package knows nothing of plugins.
"""

from __future__ import annotations

from drsg.pipeline.code.handler import Handler
from drsg.pipeline.code.python_handler import VOCABULARY, PythonHandler

#: what each built-in handler emits, for `drsg plugin show NAME`
BUILTIN_VOCABULARY = {"py": VOCABULARY}


def builtin_handlers() -> list[Handler]:
    return [PythonHandler()]

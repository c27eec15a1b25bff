"""kernel/imports.py: a library imported with an extra hidden or deferred, in a fresh interpreter.

A planted library stands for structlog and lark: at its import it tries an optional extra (kept
only if importable) and binds another that only its functions use.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

_LIBRARY = {
    "lib/__init__.py": "try:\n    import optional\n    HAS = True\nexcept ImportError:\n    HAS = False\n"
    "try:\n    import other\n    HAS_OTHER = True\nexcept ImportError:\n    HAS_OTHER = False\nimport bound\n"
    "def use():\n    return bound.VALUE\n",
    "optional.py": "",
    "other.py": "",
    "bound.py": "VALUE = 42\n",
}


def _run(tmp_path: Path, body: str) -> None:
    for name, text in _LIBRARY.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    code = f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\nfrom drsg.kernel.imports import lean\n{body}"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_hidden_extra_is_not_loaded_and_stays_importable(tmp_path: Path) -> None:
    _run(
        tmp_path,
        "lib = lean('lib', hide=('optional',))\n"
        "assert lib.HAS is False and 'optional' not in sys.modules\n"
        "import optional\n",  # hidden only while lib loaded
    )


def test_a_deferred_extra_loads_on_first_use_as_the_one_real_module(tmp_path: Path) -> None:
    _run(
        tmp_path,
        "lib = lean('lib', defer=('bound',))\n"
        "assert 'bound' not in sys.modules\n"
        "assert lib.use() == 42\n"
        "import bound\n"
        "assert sys.modules['bound'] is bound and bound.VALUE == 42\n",
    )


@pytest.mark.parametrize("loaded", ["lib", "optional"])
def test_nothing_is_hidden_when_the_library_or_the_extra_is_loaded_already(tmp_path: Path, loaded: str) -> None:
    _run(tmp_path, f"import {loaded}\nlib = lean('lib', hide=('optional',))\nassert lib.HAS is True\n")


def test_an_extra_loaded_already_leaves_the_others_hidden(tmp_path: Path) -> None:
    """structlog's rich stays hidden when something loaded greenlet first (SQLAlchemy, say)."""
    _run(
        tmp_path,
        "import other\nlib = lean('lib', hide=('optional', 'other'))\n"
        "assert (lib.HAS, lib.HAS_OTHER) == (False, True)\n",
    )

"""The WASI interfaces a plugin may import, and what each is granted: an allow-list.

Standard wasip2 toolchains (Rust's std, wasi-libc through jco's preview1 adapter) plant imports of
``wasi:cli/*``, ``wasi:io/*``, ``wasi:clocks/*``, ``wasi:random/*`` and ``wasi:filesystem/*`` before a
plugin's first line runs. Like upstream, drsg links them to inert grants rather than refusing the
component: wasmtime's own WASI (``add_wasip2``) on a ``WasiConfig`` that inherits nothing — no
environment, no arguments, no preopened directory (so every file system call fails), empty stdin,
stdout discarded, stderr's last :data:`STDERR_TAIL` bytes kept for a call that fails (:class:`Tail`)
— with drsg's frozen clocks and fixed entropy defined over wasmtime's (``add_wasip2`` has no clock
control). ``exit`` ends the call with an error naming the plugin.

``wasi:sockets`` is refused by name: nothing needs a socket to start, so importing one states an
intent. ``[plugins] wasi = "strict"`` also refuses ``wasi:filesystem`` (the seed's stance). Any other
interface, or a version outside the 0.2.x family, is refused: what is not listed here is not given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import wasmtime

WasiMode = Literal["inert", "strict"]
MODES: tuple[WasiMode, ...] = ("inert", "strict")

#: the bytes of a plugin's stderr a call keeps, the last ones: shown only when the call fails
STDERR_TAIL = 4096
#: an import of the 0.2.x family: ``wasi:<package>/<interface>@0.2.<patch>``
_WASI_02 = re.compile(r"wasi:([a-z-]+/[a-z-]+)@0\.2\.\d+")


@dataclass(frozen=True)
class Grant:
    """What one WASI interface gets: ``shown`` is what ``plugin show`` prints; ``functions`` the ones
    drsg defines itself (None: wasmtime's, any it has); ``refused`` the functions refused by name."""

    shown: str
    functions: frozenset[str] | None = None
    refused: frozenset[str] = frozenset()


_TERMINAL = Grant("inert: no terminal")
FROZEN_WHY = "it would wait on a clock; the clocks are frozen and wasi:io/poll waits on none"
#: every WASI interface a plugin may import, by ``package/interface``
GRANTS: dict[str, Grant] = {
    "cli/environment": Grant("inert: empty (no variables, arguments or working directory)"),
    "cli/exit": Grant("ends the call with an error naming the plugin"),
    "cli/stdin": Grant("inert: empty"),
    "cli/stdout": Grant("inert: discarded"),
    "cli/stderr": Grant("kept: shown when a call fails (its last line; its last 4 KiB at -v)"),
    "cli/terminal-input": _TERMINAL,
    "cli/terminal-output": _TERMINAL,
    "cli/terminal-stdin": _TERMINAL,
    "cli/terminal-stdout": _TERMINAL,
    "cli/terminal-stderr": _TERMINAL,
    "io/error": Grant("inert: errors of the streams above"),
    "io/streams": Grant("inert: the empty and discarding streams above"),
    "io/poll": Grant("inert: the streams above, always ready"),
    "clocks/wall-clock": Grant("frozen: 1970-01-01T00:00:00Z", frozenset({"now", "resolution"})),
    "clocks/monotonic-clock": Grant(
        "frozen: 0 ns", frozenset({"now", "resolution"}), frozenset({"subscribe-instant", "subscribe-duration"})
    ),
    "random/random": Grant('fixed: the bytes "drsg" repeated', frozenset({"get-random-bytes", "get-random-u64"})),
    "random/insecure": Grant(
        'fixed: the bytes "drsg" repeated', frozenset({"get-insecure-random-bytes", "get-insecure-random-u64"})
    ),
    "random/insecure-seed": Grant("fixed", frozenset({"insecure-seed"})),
    "filesystem/types": Grant("inert: no descriptors (every call fails)"),
    "filesystem/preopens": Grant("inert: no directories"),
}
#: refused by name whatever the mode, with why
REFUSED = {"sockets": "it would reach the network; nothing needs a socket to start, so a plugin may not import one"}
STRICT_REFUSED = {
    "filesystem": 'it would reach the file system, and [plugins] wasi = "strict" refuses it '
    '(set wasi = "inert" to link it to no directories)'
}


def family(interface: str) -> str | None:
    """``package/interface`` of a WASI 0.2.x import (``cli/environment``), else None."""
    match = _WASI_02.fullmatch(interface)
    return match[1] if match else None


def refusal(interface: str, mode: WasiMode) -> str | None:
    """Why ``interface`` is refused by name in ``mode`` (None: not refused by name)."""
    if not interface.startswith("wasi:"):
        return None
    package = interface[len("wasi:") :].split("/", 1)[0]
    if package in REFUSED:
        return REFUSED[package]
    if mode == "strict" and package in STRICT_REFUSED:
        return STRICT_REFUSED[package]
    return None


def grant(interface: str) -> Grant | None:
    """The grant of an allowed WASI import (None: not a WASI interface drsg gives)."""
    name = family(interface)
    return None if name is None else GRANTS.get(name)


def needs_wasmtime(imports: dict[str, frozenset[str]]) -> bool:
    """Whether any import is one wasmtime's WASI defines (drsg defines only clocks and random)."""
    return any((g := grant(interface)) is not None and g.functions is None for interface in imports)


def exit_carries_code(imports: dict[str, frozenset[str]]) -> bool:
    """Whether the plugin can tell its exit code: ``wasi:cli/exit``'s ``exit`` takes only ok or
    err (the preview1 adapter maps ``exit(3)`` to err, which wasmtime reports as 1); only the
    unstable ``exit-with-code`` carries the code itself."""
    return any(family(name) == "cli/exit" and "exit-with-code" in functions for name, functions in imports.items())


def exited(code: int, carries_code: bool) -> str:
    """What can honestly be said of a plugin's exit: its code only when its interface carried one."""
    if carries_code:
        return f"called exit({code})"
    if code == 0:
        return "exited with a success status"
    return "exited with an error status (wasi:cli/exit carries no exit code)"


class Tail:
    """The last :data:`STDERR_TAIL` bytes a plugin wrote to stderr in one call."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.cut = False  # whether earlier bytes were dropped

    def write(self, chunk: bytes) -> None:
        self.data += chunk[-STDERR_TAIL:]
        self.cut = self.cut or len(self.data) > STDERR_TAIL
        del self.data[:-STDERR_TAIL]

    def text(self) -> str:
        """As text to show, from its first whole line: printable characters, tabs and line breaks
        only (a plugin's bytes must not reach a terminal's escape sequences)."""
        data = self.data[self.data.find(b"\n") + 1 :] if self.cut else self.data
        decoded = data.decode("utf-8", "replace")
        return "".join(c if c.isprintable() or c in "\n\t" else "\ufffd" for c in decoded).strip()


def inert_config(stderr: Tail | None = None) -> wasmtime.WasiConfig:
    """A store's WASI state for wasmtime's interfaces: nothing inherited, nothing preopened, no
    environment or arguments; stdin empty, stdout discarded (wasmtime's defaults), stderr kept in
    ``stderr`` (else discarded)."""
    config = wasmtime.WasiConfig()
    if stderr is not None:
        config.stderr_custom = stderr.write
    return config

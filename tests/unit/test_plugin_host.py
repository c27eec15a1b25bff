"""The plugin host against real components (hand-written WAT in tests/data/plugins): the happy path,
the frozen clocks and fixed entropy, and hostile plugins stopped within their budgets with the host
unharmed and the next call fine."""

from __future__ import annotations

import gc
import os
import re
import threading
import time
from pathlib import Path

import pytest

from drsg.kernel.errors import PluginBudget, PluginError
from drsg.kernel.settings import Settings
from drsg.pipeline.code.handler import Doc, SourceTree
from drsg.pipeline.plugins import fastbytes, memory, sandbox, wasi
from drsg.pipeline.plugins.host import MAX_PARTIAL, Budget, PluginHandler, plugin_options

PLUGINS = Path(__file__).resolve().parents[1] / "data" / "plugins"


def load(name: str, budget: Budget | None = None, text: str | None = None) -> PluginHandler:
    data = (text if text is not None else (PLUGINS / f"{name}.wat").read_text()).encode()
    return PluginHandler(sandbox.compile_component(data, name, None), name, budget or Budget(timeout_s=10))


@pytest.fixture
def tree(tmp_path: Path) -> SourceTree:
    root = tmp_path / "proj" / "src"
    root.mkdir(parents=True)
    (root / "a.txt").write_text("alpha")
    (root / "b.txt").write_text("beta")
    (tmp_path / "secret.txt").write_text("outside the tree")
    (root / "link.txt").symlink_to(tmp_path / "secret.txt")
    return SourceTree(root, ["a.txt", "b.txt", "link.txt"])


def echo_works(tree: SourceTree) -> None:
    """The host is unharmed: a well-behaved plugin still runs, start to end."""
    assert load("echo").parse(tree, ("a.txt",), []) == b"alpha"


# ------------------------------------------------------------------------------------ happy path


def test_echo_implements_the_world(tree: SourceTree) -> None:
    echo = load("echo")
    assert (echo.manifest.name, echo.manifest.version, echo.manifest.extensions) == ("echo", "1.0.0", (".txt",))
    assert echo.manifest.ident == "echo@1.0.0" and echo.manifest.logo is None
    assert echo.parse(tree, ("b.txt",), [("k", "v")]) == b"beta"
    assert echo.parse(tree, Doc("d.txt", b"whole document"), []) == b"whole document"
    out = echo.assemble(tree, [b"alpha", b"beta"], [])
    [node], [edge] = out.nodes, out.edges
    assert (node.key, node.label, node.extra_labels, node.properties) == ("alpha", "File", ("Echo",), {"n": 1})
    assert (edge.src, edge.type, edge.dst, edge.properties) == ("alpha", "SEEN_BY", "echo", {})
    assert out.prose == "proj"  # host label(): the parent's name, since the root is `src`
    assert out.report.notes == ["a.txt", "b.txt", "link.txt"]  # host list(".txt"), sorted
    assert (out.report.facts, out.report.prose_chars, out.report.skipped) == (2, 4, 0)


def test_a_plugin_error_string_reaches_the_caller(tree: SourceTree) -> None:
    with pytest.raises(PluginError, match=r"plugin echo failed in assemble\(\): no partials"):
        load("echo").assemble(tree, [], [])


def test_clocks_are_frozen_and_entropy_fixed(tree: SourceTree) -> None:
    clocks = load("clocks")
    first = clocks.parse(tree, ("a.txt",), [])
    assert first == b"drsgdrsg" + bytes(8) + bytes(8)  # random bytes, wall-clock seconds, monotonic now
    time.sleep(0.01)
    assert clocks.parse(tree, ("a.txt",), []) == first


@pytest.mark.parametrize("version", ["0.2.0", "0.2.3", "0.2.6", "0.2.12"])
def test_clocks_stay_frozen_beside_wasmtimes_wasi(tree: SourceTree, version: str) -> None:
    """With an import wasmtime's WASI defines (so add_wasip2 is linked), drsg's frozen clocks and fixed
    entropy still answer, whichever 0.2.x the component names (wasmtime's own patch, older or newer)."""
    text = re.sub(r"@0\.2\.\d+", f"@{version}", (PLUGINS / "clocks.wat").read_text())
    environ = (
        f'(import "wasi:cli/environment@{version}" '
        '(instance (export "get-environment" (func (result (list (tuple string string)))))))'
    )
    clocks = load("clocks", text=text.replace("(component", f"(component\n  {environ}", 1))
    assert any(interface.startswith("wasi:cli/environment") for interface, _ in clocks.grants)
    first = clocks.parse(tree, ("a.txt",), [])
    assert first == b"drsgdrsg" + bytes(8) + bytes(8)
    time.sleep(0.01)
    assert clocks.parse(tree, ("a.txt",), []) == first


def test_options_are_string_pairs() -> None:
    settings = Settings({}, {}, None, plugin_tables={"rust": {"include_source": True, "depth": 3, "w": 0.5, "s": "x"}})
    assert plugin_options(settings, "rust") == [("include_source", "true"), ("depth", "3"), ("w", "0.5"), ("s", "x")]
    assert plugin_options(settings, "other") == []
    with pytest.raises(PluginError, match=r"\[plugins.bad\] l is a list"):
        plugin_options(Settings({}, {}, None, plugin_tables={"bad": {"l": [1]}}), "bad")


# ---------------------------------------------------------------------------------------- budgets


def test_an_infinite_loop_runs_out_of_fuel(tree: SourceTree) -> None:
    loop = load("loop", Budget(fuel=50_000_000, timeout_s=30))
    start = time.monotonic()
    with pytest.raises(PluginBudget) as caught:
        loop.parse(tree, ("a.txt",), [])
    assert time.monotonic() - start < 5
    assert "plugin loop" in caught.value.message and "[plugins] fuel" in caught.value.message
    assert "DRSG_PLUGINS_FUEL" in caught.value.message
    with pytest.raises(PluginBudget):  # a fresh instance each call: the same answer, nothing left over
        loop.parse(tree, ("a.txt",), [])
    echo_works(tree)


def test_with_fuel_off_the_timeout_stops_it(tree: SourceTree) -> None:
    loop = load("loop", Budget(fuel=0, timeout_s=0.3))
    start = time.monotonic()
    with pytest.raises(PluginBudget, match=r"plugin loop ran past its 0.3 s .*\[plugins\] timeout_s"):
        loop.parse(tree, ("a.txt",), [])
    assert 0.25 < time.monotonic() - start < 2
    echo_works(tree)


def test_a_memory_bomb_is_stopped_at_memory_mb(tree: SourceTree) -> None:
    bomb = load("bomb", Budget(memory_mb=32, fuel=10**9, timeout_s=10))
    assert sandbox.memory_watched  # plugin memory is the host's: a refused grow is seen
    with pytest.raises(PluginBudget, match=r"plugin bomb needed more than its 32 MiB of memory in parse\(\)"):
        bomb.parse(tree, ("a.txt",), [])
    with pytest.raises(PluginBudget, match=r"\[plugins\] memory_mb"):  # the same again: nothing left over
        bomb.parse(tree, ("a.txt",), [])
    echo_works(tree)


def test_memory_is_released_and_bounds_still_trap(tree: SourceTree) -> None:
    """Each call's memory is unmapped with its store, and an access past the accessible part still
    traps (the guard region is there as in wasmtime's own allocator)."""
    for _ in range(20):
        load("echo").parse(tree, ("a.txt",), [])
    gc.collect()
    assert memory.live() <= 2
    past_the_end = "(drop (i32.load (i32.const 70000)))"  # one 64 KiB page is accessible
    oob = (PLUGINS / "loop.wat").read_text().replace("(loop $forever (br $forever))", past_the_end)
    with pytest.raises(PluginError, match=r"trapped in parse\(\) of a\.txt: .*memory fault"):
        load("loop", text=oob).parse(tree, ("a.txt",), [])
    echo_works(tree)


def test_memory_needed_at_start_over_the_limit_names_memory_mb(tree: SourceTree) -> None:
    big = (PLUGINS / "loop.wat").read_text().replace('(memory (export "memory") 1)', '(memory (export "memory") 1024)')
    assert big != (PLUGINS / "loop.wat").read_text()
    with pytest.raises(PluginBudget, match=r"more than its 16 MiB of memory in instantiating it.*memory_mb"):
        load("loop", Budget(memory_mb=16), text=big)
    load("loop", Budget(memory_mb=128), text=big)  # fits: describe answers


def test_a_slow_host_read_is_cut_at_the_timeout(tree: SourceTree) -> None:
    class SlowTree(SourceTree):
        def read(self, path: str) -> bytes:
            time.sleep(3)
            return super().read(path)

    slow = SlowTree(tree.root, tree.files)
    start = time.monotonic()
    with pytest.raises(PluginBudget, match=r"plugin echo ran past its 0.4 s \(in host read\)"):
        load("echo", Budget(timeout_s=0.4)).parse(slow, ("a.txt",), [])
    assert time.monotonic() - start < 1.5  # fuel does not count host time; the deadline does
    echo_works(tree)


def test_a_read_that_blocks_forever_is_cut_at_the_timeout(tree: SourceTree) -> None:
    fifo = tree.root / "pipe.txt"
    os.mkfifo(fifo)
    blocking = SourceTree(tree.root, [*tree.files, "pipe.txt"])
    try:
        start = time.monotonic()
        with pytest.raises(PluginBudget, match=r"in host read"):
            load("echo", Budget(timeout_s=0.4)).parse(blocking, ("pipe.txt",), [])
        assert time.monotonic() - start < 1.5
    finally:  # let the abandoned reader go: a writer opens, and closing is its end of file
        writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(writer)
    echo_works(tree)


# ------------------------------------------------------------------------------- refused and wrong


@pytest.mark.parametrize(
    ("fixture", "mode", "interface", "why"),
    [
        ("fs", "strict", "wasi:filesystem/preopens@0.2.0", '[plugins] wasi = "strict" refuses it'),
        ("sockets", "inert", "wasi:sockets/tcp@0.2.0", "network"),
        ("sockets", "strict", "wasi:sockets/tcp@0.2.0", "network"),
        ("unknown", "inert", "acme:net/fetch@1.0.0", "does not provide"),
        ("poll", "inert", "wasi:clocks/monotonic-clock@0.2.0/subscribe-duration", "wasi:io/poll"),
    ],
)
def test_forbidden_imports_are_refused_by_name(fixture: str, mode: wasi.WasiMode, interface: str, why: str) -> None:
    with pytest.raises(PluginError) as caught:
        load(fixture, Budget(timeout_s=10, wasi=mode))
    assert not isinstance(caught.value, PluginBudget)
    message = caught.value.message
    assert f"imports {interface}," in message and why in message and "\n" not in message


def test_an_environment_import_gets_an_inert_grant() -> None:
    """wasi:cli/environment is linked (wasmtime's WASI on a config that inherits nothing), in either mode."""
    for mode in wasi.MODES:
        handler = load("environ", Budget(timeout_s=10, wasi=mode))
        assert ("wasi:cli/environment@0.2.0", wasi.GRANTS["cli/environment"].shown) in handler.grants


def test_a_wasi_import_of_another_type_is_refused_in_one_line() -> None:
    """fs.wat's get-directories answers list<string>, not 0.2's list<tuple<descriptor, string>>."""
    with pytest.raises(PluginError) as caught:
        load("fs")
    message = caught.value.message
    assert message.startswith("plugin fs cannot be linked:") and "get-directories" in message and "\n" not in message


@pytest.mark.parametrize("interface", ["wasi:cli/environment@0.3.0", "wasi:http/types@0.2.0", "wasi:cli/run@0.2.0"])
def test_what_is_not_listed_is_not_granted(interface: str) -> None:
    assert wasi.grant(interface) is None and wasi.refusal(interface, "inert") is None


@pytest.mark.parametrize(
    ("path", "answer"),
    [
        ("../secret.txt", "leads outside the tree"),
        ("/etc/passwd", "is not a path relative to the tree's root"),
        ("link.txt", "leads outside the tree"),  # admitted by name, but it resolves outside
        ("c.txt", "is not one of the files"),
    ],
)
def test_reads_outside_the_tree_answer_an_error(tree: SourceTree, path: str, answer: str) -> None:
    with pytest.raises(PluginError, match=rf"plugin echo failed in parse\(\) of {re.escape(path)}: .*{answer}"):
        load("echo").parse(tree, (path,), [])
    echo_works(tree)


def test_properties_that_are_not_json_are_refused(tree: SourceTree) -> None:
    with pytest.raises(PluginError, match=r"plugin badj answered node 'k' properties that are not JSON"):
        load("badjson").assemble(tree, [b"k"], [])


def test_a_ten_megabyte_partial_is_refused(tree: SourceTree) -> None:
    start = time.monotonic()
    with pytest.raises(PluginError, match=rf"plugin bigp .*{MAX_PARTIAL} bytes"):
        load("bigpartial").parse(tree, ("a.txt",), [])
    assert time.monotonic() - start < 2
    text = (PLUGINS / "bigpartial.wat").read_text().replace("10485760", str(MAX_PARTIAL + 1))
    with pytest.raises(PluginError, match=rf"answered a {MAX_PARTIAL + 1}-byte partial, over the {MAX_PARTIAL}"):
        load("bigpartial", text=text).parse(tree, ("a.txt",), [])
    text = (PLUGINS / "bigpartial.wat").read_text().replace("10485760", "1000000")
    assert len(load("bigpartial", text=text).parse(tree, ("a.txt",), [])) == 1_000_000
    echo_works(tree)


def test_parallel_calls_share_nothing(tree: SourceTree) -> None:
    echo, loop = load("echo"), load("loop", Budget(fuel=50_000_000))
    answers: list[object] = []

    def run(i: int) -> None:
        try:
            path = "a.txt" if i % 2 else "b.txt"
            answers.append(echo.parse(tree, (path,), []) if i % 3 else loop.parse(tree, (), []))
        except PluginError as exc:
            answers.append(type(exc).__name__)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(map(str, answers)) == sorted(["PluginBudget"] * 4 + [str(b"alpha")] * 4 + [str(b"beta")] * 4)


def test_a_function_of_another_type_than_the_contract_is_refused() -> None:
    contract = (
        '(func $parse (param "subject" $input) (param "options" $options) (result (result (list u8) (error string)))'
    )
    text = (PLUGINS / "loop.wat").read_text()
    assert contract in text
    wrong = text.replace(contract, '(func $parse (param "subject" $input) (param "options" $options) (result string)')
    with pytest.raises(
        PluginError, match=r"plugin loop's drsg:preprocess/preprocessor@1.0.0/parse has type .* -> string, not"
    ):
        load("loop", text=wrong)


def test_bytes_cross_the_boundary_exactly(tree: SourceTree) -> None:
    """The bulk list<u8> copy (fastbytes) both ways: every byte value, empty, and odd sizes."""
    assert fastbytes.install()
    echo = load("echo")
    for data in (b"", bytes(range(256)) * 3, b"\0" * 7, bytes(range(255, -1, -1)) + b"\xff"):
        assert echo.parse(tree, Doc("d", data), []) == data


def test_what_the_host_hands_in_is_not_held_to_the_partial_limit(tree: SourceTree) -> None:
    """wasmtime's copy limit is on what it lifts out of a component; partials going in are not lifted."""
    partials = [b"k"] + [bytes(1000)] * 5000  # 5 MB, past the ~3 MiB wasmtime lifts in one call
    out = load("echo").assemble(tree, partials, [])
    assert [n.key for n in out.nodes][:1] == ["k"]


def test_a_plugins_stderr_tail_is_its_last_whole_lines_as_plain_text() -> None:
    tail = wasi.Tail()
    tail.write(b"\x1b]0;title\x07red \x1b[31mtext\r\n")
    assert tail.text() == "\ufffd]0;title\ufffdred \ufffd[31mtext\ufffd"  # no control byte reaches a terminal
    for n in range(2000):
        tail.write(f"line {n}\n".encode())
    text = tail.text()
    assert len(tail.data) == wasi.STDERR_TAIL and text.endswith("line 1999")
    first = int(text.splitlines()[0].removeprefix("line "))  # a whole line, the first one kept
    assert text == "\n".join(f"line {n}" for n in range(first, 2000))

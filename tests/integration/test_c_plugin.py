"""The C parser plugin (``plugins/c``, built by ``make plugins``), driven as a component through wasmtime.

Ground truth on a real project: the tree-sitter runtime's own sources (from the sdist the build
downloads), read independently by clang (its JSON AST): every function definition clang finds in the
project's files is a Function node with the right key and line. On every tree: every edge's ends are
nodes, every fact carries ``_generated_by``, a second run is byte-identical, and chunking does not
change a byte. On a hand-written tree (tests/data/c_fixture): how each call resolves, or is left alone.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from drsg.pipeline.code.handler import Output
from tests.support.c_oracle import Definition, read
from tests.support.wasm_plugin import BUILD, ComponentPlugin, built_plugin, output_bytes

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "c_fixture"
RUNTIME = BUILD / "src" / "tree-sitter-0.23.2" / "tree_sitter" / "core" / "lib"
GENERATED_BY = "c@1.0.0"


@pytest.fixture(scope="module")
def plugin() -> ComponentPlugin:
    return ComponentPlugin(built_plugin("c"))


@pytest.fixture(scope="module")
def runtime_tree(tmp_path_factory: pytest.TempPathFactory, plugin: ComponentPlugin) -> Path:
    """The tree-sitter runtime (lib/include, lib/src) as a project of its own."""
    root = tmp_path_factory.mktemp("tree-sitter")
    shutil.copytree(RUNTIME / "include", root / "include")
    shutil.copytree(RUNTIME / "src", root / "src")
    return root


def nodes_by_key(out: Output) -> dict[str, Any]:
    keys = [node.key for node in out.nodes]
    assert len(keys) == len(set(keys)), "a key names two nodes"
    return {node.key: node for node in out.nodes}


def edge(out: Output, src: str, kind: str, dst: str) -> dict[str, Any]:
    found = [e.properties for e in out.edges if (e.src, e.type, e.dst) == (src, kind, dst)]
    assert len(found) == 1, f"{src} -{kind}-> {dst}: {len(found)} edges"
    return found[0]


def check_well_formed(out: Output) -> None:
    nodes = nodes_by_key(out)
    for e in out.edges:
        assert e.src in nodes and e.dst in nodes, f"edge {e.src} -{e.type}-> {e.dst} has an end that is no node"
        assert isinstance(e.properties.get("line"), int) and e.properties["line"] >= 1, e
        assert e.properties["_generated_by"] == GENERATED_BY
    for node in out.nodes:
        assert node.properties["_generated_by"] == GENERATED_BY, node.key
    pairs = [(e.src, e.type, e.dst) for e in out.edges]
    assert len(pairs) == len(set(pairs)), "one edge per (src, type, dst)"
    assert out.report.facts == len(out.nodes) + len(out.edges)
    assert out.prose == "" and out.report.prose_chars == 0


def test_the_component_imports_only_the_host_interface(plugin: ComponentPlugin) -> None:
    assert plugin.imports() == ["drsg:preprocess/host@1.0.0"]
    manifest = plugin.describe()
    assert (manifest.name, manifest.version, manifest.extensions, manifest.logo) == ("c", "1.0.0", (".c", ".h"), None)


@pytest.fixture(scope="module")
def runtime_truth(runtime_tree: Path) -> Any:
    sources = sorted(p.relative_to(runtime_tree).as_posix() for p in (runtime_tree / "src").glob("*.c"))
    sources.remove("src/lib.c")  # it #includes every other .c file: the same definitions again
    return read(runtime_tree, sources, ["include", "src"])


def expected_key(d: Definition) -> str:
    return f"{Path(d.path).stem}.{d.name}" if d.static else d.name


def test_every_function_clang_defines_in_the_runtime_is_a_node_with_its_key_and_line(
    plugin: ComponentPlugin, runtime_tree: Path, runtime_truth: Any
) -> None:
    truth = runtime_truth.definitions
    assert len(truth) > 400  # the runtime really was read
    assert not [d for d in truth if d.macro]  # every name is written out (no FN(name) tricks) in this project

    out = plugin.run(runtime_tree)
    check_well_formed(out)
    functions: dict[tuple[str, str], list[Any]] = {}
    for node in out.nodes:
        if node.label == "Function":
            functions.setdefault((node.properties["file"], node.properties["name"]), []).append(node)
    wrong = []
    for d in sorted(truth, key=lambda d: (d.path, d.line)):
        found = functions.get((d.path, d.name), [])
        key = expected_key(d)
        if len(found) != 1:
            wrong.append(f"{d}: {len(found)} nodes")
            continue
        node = found[0]
        lines = node.properties.get("lines", [node.properties["line"]])
        visibility = "static" if d.static else "exported"
        if node.key != key or d.line not in lines or node.properties["visibility"] != visibility:
            wrong.append(f"{d}: node {node.key} lines {lines} {node.properties['visibility']}")
        if len(lines) == 1:
            assert node.properties["line"] == d.line
    assert not wrong, "\n".join(wrong)
    # every file is a module; calls resolved inside the runtime are edges between its functions
    modules = {n.key for n in out.nodes if n.label == "Module" and "External" not in n.extra_labels}
    assert modules == {p.relative_to(runtime_tree).as_posix() for p in runtime_tree.rglob("*.[ch]")}
    calls = [e for e in out.edges if e.type == "CALLS" and e.properties["_resolved_by"] != "unresolved"]
    assert len(calls) > 1000
    assert edge(out, "ts_parser_parse", "CALLS", "parser.ts_parser__advance")["_resolved_by"] == "static"
    assert any("named nothing defined here" in note for note in out.report.notes)


def test_every_call_clang_sees_in_the_runtime_is_an_edge_to_the_same_definition(
    plugin: ComponentPlugin, runtime_tree: Path, runtime_truth: Any
) -> None:
    """Completeness: each direct call clang finds (written in the text, between the project's own
    functions) is a CALLS edge to the definition clang binds it to. Precision: where the plugin draws a
    call clang also sees, it names the same definition (the plugin also reads #if branches clang skips,
    so its other edges cannot be checked this way)."""
    out = plugin.run(runtime_tree)
    extern: dict[str, list[Definition]] = {}
    for d in runtime_truth.definitions:
        if not d.static:
            extern.setdefault(d.name, []).append(d)
    expected: dict[tuple[str, str], str] = {}
    for call in runtime_truth.calls:
        target = call.target or (extern[call.callee][0] if len(extern.get(call.callee, [])) == 1 else None)
        if target is not None:
            expected[(expected_key(call.caller), call.callee)] = expected_key(target)
    assert len(expected) > 700
    edges = {(e.src, e.properties["_ref"]): e for e in out.edges if e.type == "CALLS"}
    missing = [f"{src} -> {name}: expected {dst}" for (src, name), dst in expected.items() if (src, name) not in edges]
    wrong = [
        f"{src} -> {name}: {edges[(src, name)].dst}, clang binds {dst}"
        for (src, name), dst in expected.items()
        if (src, name) in edges and edges[(src, name)].dst != dst
    ]
    assert not missing and not wrong, "\n".join(missing + wrong)


def test_a_second_run_and_other_chunkings_give_the_same_bytes(plugin: ComponentPlugin, runtime_tree: Path) -> None:
    first = plugin.run(runtime_tree)
    second = plugin.run(runtime_tree)
    chunked = plugin.run(runtime_tree, chunk=7)
    assert output_bytes(first) == output_bytes(second) == output_bytes(chunked)


def test_calls_resolve_to_the_one_definition_they_can_mean(plugin: ComponentPlugin) -> None:
    out = plugin.run(FIXTURE)
    check_well_formed(out)
    nodes = nodes_by_key(out)
    # keys: modules by path (main.c's module is not function main), static = stem.name, tags by tag
    assert nodes["src/main.c"].label == "Module" and nodes["main"].label == "Function"
    for key, label in {
        "a.helper": "Function",
        "b.helper": "Function",
        "lib.helper": "Function",
        "shared": "Function",
        "lib#SQUARE": "Macro",
        "struct counter": "Struct",
        "union number": "Union",
        "enum colour": "Enum",
        "counter_t": "TypeAlias",
        "point": "TypeAlias",
        "lib.table": "Const",
        "total": "Var",
        "chosen": "Var",
    }.items():
        assert nodes[key].label == label, key
    assert nodes["struct counter"].properties["fields"] == ["value", "name"]
    assert nodes["enum colour"].properties["variants"] == ["RED", "GREEN", "BLUE"]
    assert nodes["point"].properties["fields"] == ["x", "y"]
    assert nodes["shared"].properties["signature"] == "int shared(int n)"
    assert nodes["shared"].properties["doc_comment"] == "/* Returns n squared,\n   plus one. */"
    assert nodes["shared"].properties["line"] == 8 and nodes["shared"].properties["visibility"] == "exported"
    assert nodes["b.helper"].properties["doc_comment"] == "/* not UTF-8: caf\ufffd */"  # the byte 0xE9, replaced
    # one static defined in both #ifdef branches: one node, both lines
    assert nodes["main.plat"].properties["lines"] == [8, 10]
    # static by a macro, read for the configuration clang reads: not MSVC; EXPOSE_FOR_TESTS is set nowhere
    assert nodes["cond.hidden_helper"].properties["visibility"] == "static"
    assert nodes["cond.maybe_hidden"].properties["signature"] == "TESTABLE int maybe_hidden(void)"
    assert nodes["cond#API"].properties["lines"] == [2, 4]
    assert nodes["cond#API"].properties["if"] == "defined(_MSC_VER)"  # the first definition's

    # each file's static helper is its own
    assert edge(out, "a_entry", "CALLS", "a.helper")["_resolved_by"] == "static"
    assert edge(out, "b_entry", "CALLS", "b.helper")["_resolved_by"] == "static"
    assert edge(out, "undeclared", "CALLS", "lib.helper")["_confidence"] == "high"
    # by name: sure with a prototype in sight (lib.h), a link-time match without one
    shared = edge(out, "main", "CALLS", "shared")
    assert [shared[k] for k in ("_resolved_by", "_confidence", "_ref", "line")] == ["name", "high", "shared", 16]
    assert edge(out, "main", "CALLS", "undeclared")["_confidence"] == "medium"
    assert edge(out, "b_entry", "CALLS", "a_entry")["_confidence"] == "medium"
    # dup is defined (non-static) in two files: two keys, and the call is left unresolved, not guessed
    assert {"src/dup1.c:dup", "src/dup2.c:dup"} <= set(nodes)
    unresolved = edge(out, "main", "CALLS", "?::src/main.c::dup")
    assert (unresolved["_resolved_by"], unresolved["_confidence"]) == ("unresolved", "none")
    assert nodes["?::src/main.c::dup"].label == "UnresolvedRef"
    assert not [e for e in out.edges if e.dst in ("src/dup1.c:dup", "src/dup2.c:dup") and e.type == "CALLS"]
    # a static of a file main.c does not include, printf, and a call through a pointer: no edges
    assert not [e for e in out.edges if e.dst == "a.a_only" and e.type == "CALLS"]
    callees = {e.dst for e in out.edges if e.src == "main"}
    assert callees == {"bump", "shared", "lib#SQUARE", "main.plat", "undeclared", "?::src/main.c::dup"}
    notes = "\n".join(out.report.notes)
    assert out.report.notes[0] == "c_fixture: 8 file(s) read"
    assert "had no partial" not in notes
    assert "2 call(s) named nothing defined here" in notes  # printf, twice
    assert "1 call(s) named only a static function of a file the caller does not include" in notes
    assert "1 call(s) named more than one definition equally" in notes
    assert "1 call(s) through a pointer or a field" in notes  # chosen(1)
    # macros, functions as values, includes
    assert edge(out, "main", "INVOKES", "lib#SQUARE")["_resolved_by"] == "macro"
    assert edge(out, "chosen", "REFERENCES", "shared")["_resolved_by"] == "fn-ref"
    assert edge(out, "src/main.c", "IMPORTS", "include/lib.h")["_confidence"] == "high"
    assert edge(out, "src/lib.c", "IMPORTS", "include/lib.h")["_resolved_by"] == "suffix"
    assert edge(out, "src/main.c", "IMPORTS", "<stdio.h>")["_resolved_by"] == "system"
    assert nodes["<stdio.h>"].extra_labels == ("External",)
    assert edge(out, "src/main.c", "IMPORTS", '"missing.h"')["_resolved_by"] == "unresolved"
    assert edge(out, "src/lib.c", "CONTAINS", "shared")["line"] == 8


def test_include_source_adds_each_definitions_text(plugin: ComponentPlugin) -> None:
    out = plugin.run(FIXTURE, options=[("include_source", "true")])
    nodes = nodes_by_key(out)
    assert nodes["shared"].properties["_code"] == "int shared(int n) { return SQUARE(n) + 1; }"
    assert nodes["main"].properties["_code"].startswith("int main(void) {\n")
    plain = plugin.run(FIXTURE)
    assert all("_code" not in node.properties for node in plain.nodes)
    # the option changes nothing else
    with_code = [(n.key, {k: v for k, v in n.properties.items() if k != "_code"}) for n in out.nodes]
    assert with_code == [(n.key, n.properties) for n in plain.nodes]


def test_a_file_the_host_refuses_is_skipped_and_named(plugin: ComponentPlugin, tmp_path: Path) -> None:
    from drsg.pipeline.code.handler import SourceTree

    root = tmp_path / "src"  # the host labels a tree called src by its parent's name
    root.mkdir()
    (root / "ok.c").write_text("int ok(void) { return 0; }\n")
    (root / "never.h").write_text("int never(void);\n")
    tree = SourceTree(root, ["ok.c", "never.h"])
    partials = [plugin.parse(tree, ["ok.c"]), plugin.parse(tree, ["../escape.c"])]
    raw = plugin.assemble(tree, partials)
    assert raw.report.skipped == 1
    assert any(note.startswith("../escape.c: not read (") for note in raw.report.notes)
    assert [n.key for n in raw.nodes] == ["ok.c", "ok"]
    # assemble asks the host (list, label) what the tree holds: never.h had no partial
    assert f"{tmp_path.name}: 1 file(s) read" in raw.report.notes
    assert any(note.startswith("1 file(s) of the tree had no partial") for note in raw.report.notes)


def test_a_file_too_large_for_one_partial_keeps_its_definitions(plugin: ComponentPlugin) -> None:
    """Over max_partial_bytes (compressed), parse leaves out value uses, then calls, then descriptive
    properties — never definitions, and no key changes — and says so."""
    full = plugin.run(FIXTURE)
    bare = plugin.run(FIXTURE, options=[("max_partial_bytes", "1")])
    check_well_formed(bare)

    def definitions_of(out: Output) -> set[tuple[str, str, int]]:
        return {(n.key, n.label, n.properties["line"]) for n in out.nodes if {"name", "line"} <= n.properties.keys()}

    assert definitions_of(full) == definitions_of(bare)
    assert not [e for e in bare.edges if e.type in ("CALLS", "INVOKES", "REFERENCES")]
    nodes = nodes_by_key(bare)
    assert nodes["src/main.c"].properties["trimmed"] == "_code, value uses, calls and descriptive properties"
    assert "doc_comment" not in nodes["shared"].properties and "fields" not in nodes["struct counter"].properties
    assert nodes["shared"].properties["signature"] == "int shared(int n)"  # keys and resolution need it
    assert any("8 file(s) too large for a whole partial" in note for note in bare.report.notes)
    assert all("trimmed" not in n.properties for n in full.nodes)


def test_a_document_is_parsed_from_its_bytes(plugin: ComponentPlugin, tmp_path: Path) -> None:
    """input.document(doc): the variant's other case, whose payload flattens to four words."""
    from drsg.pipeline.code.handler import SourceTree

    tree = SourceTree(tmp_path, [])
    name = "docs/ünïcode.c"  # a name is any UTF-8 string
    partial = plugin.parse_document(tree, name, b"/* \xc3\xa9t\xc3\xa9 */\nstatic int summer(void) { return 1; }\n")
    out = plugin.assemble(tree, [partial])
    nodes = {n.key: n for n in out.nodes}
    assert set(nodes) == {name, "ünïcode.summer"}
    assert nodes["ünïcode.summer"].properties["doc_comment"] == "/* été */"


def test_hostile_files_give_facts_not_traps(plugin: ComponentPlugin, tmp_path: Path) -> None:
    """Garbage, NUL bytes, deep nesting (expressions, blocks, #if) and a name thousands of bytes long:
    every file still answers a well-formed Module, and nothing traps."""
    import random

    rng = random.Random(7)
    files = {
        "garbage.c": bytes(rng.randrange(256) for _ in range(20_000)),
        "nul.c": b"int a(void) { return 0; }\0\0\0 int b(void) { return a(); }\n",
        "parens.c": b"int deep(void) { return " + b"(" * 20_000 + b"1" + b")" * 20_000 + b"; }\n",
        "blocks.c": b"void nest(void) " + b"{" * 5_000 + b"}" * 5_000 + b"\n",
        "ifs.h": b"".join(b"#if defined(L%d)\n" % i for i in range(1_000)) + b"#define DEEP 1\n" + b"#endif\n" * 1_000,
        "some_ifs.h": b"".join(b"#ifdef M%d\n" % i for i in range(150)) + b"#define DEEPISH 1\n" + b"#endif\n" * 150,
        "long.c": b"int " + b"x" * 100_000 + b"(void) { return 1; }\n",
        "unterminated.c": b'/* never closed\nint f(void) { return "never closed; }\n',
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    out = raw = plugin.run(tmp_path)
    check_well_formed(out)
    nodes = nodes_by_key(out)
    assert set(files) <= set(nodes)
    assert {"deep", "nest", "x" * 100_000} <= set(nodes)
    assert nodes["some_ifs#DEEPISH"].properties["if"].count("&&") == 149
    assert "ifs#DEEP" not in nodes  # 1,000 #ifs deep: past the walk's limit, and said so
    assert any(note.startswith("1 region(s) nested more than 200 deep") for note in out.report.notes)
    again = plugin.run(tmp_path, chunk=3)
    assert output_bytes(raw) == output_bytes(again)


def test_an_empty_file_is_a_module_not_a_memory_fault(plugin: ComponentPlugin, tmp_path: Path) -> None:
    """Issue #33 item 6: an empty file's bytes came back as cabi_realloc's non-heap sentinel, which
    parse freed: `plugin c trapped in parse(): memory fault at wasm address 0xfffffffd`."""
    (tmp_path / "empty.c").write_bytes(b"")
    (tmp_path / "empty.h").write_bytes(b"")
    (tmp_path / "main.c").write_text("int main(void) { return 0; }\n")
    out = plugin.run(tmp_path)
    check_well_formed(out)
    assert {"empty.c", "empty.h", "main.c", "main"} <= set(nodes_by_key(out))


def test_digest_handler_c_on_python_files_reads_them_all(
    drsg: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`drsg digest --handler c` on a Python package (empty __init__.py files and all): facts, no trap."""
    monkeypatch.setenv("DRSG_PLUGINS_STORE_DIR", str(tmp_path / "store"))
    assert drsg("plugin", "install", str(built_plugin("c"))).code == 0
    tree = tmp_path / "pkg"
    (tree / "sub").mkdir(parents=True)
    (tree / "__init__.py").write_text("")
    (tree / "sub" / "__init__.py").write_text("")
    (tree / "sub" / "mod.py").write_text("def f(x):\n    return g(x)\n")
    ran = drsg("digest", str(tree), "--handler", "c", "--code-only")
    assert ran.code == 0, ran.err
    assert ran.lines()[0].startswith("preprocessed by c@1.0.0 (")
    assert "note: c@1.0.0: pkg: 3 file(s) read" in ran.out

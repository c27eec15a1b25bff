"""`drsg init DIR` on throwaway git repositories, through the real CLI: the four steps, a second run
that changes nothing, the files a user already has, the checks that stop it before anything is
written, and the choice between a code-only digest and one that asks the chat model."""

from __future__ import annotations

import json
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import drsg as drsg_api
from drsg.kernel import settings
from drsg.models.chat.providers import chat_key
from drsg.pipeline.code.walk import store_files
from drsg.surfaces.cli.init import ignore_patterns, render_config
from drsg.surfaces.cli.main import cli
from tests.support.cli import Drsg
from tests.support.fake_openai import FakeOpenAI
from tests.support.git_tree import commit_tree

FILES = {
    "pkg/__init__.py": "",
    "pkg/core.py": "class Engine:\n    def run(self):\n        return helper()\n\n\ndef helper():\n    return 1\n",
    "README.md": "# proj\n\nThe Engine was first run at Bletchley Park.\n",
}
CODE_KEYS = {"pkg", "pkg.core", "pkg.core.Engine", "pkg.core.Engine.run", "pkg.core.helper"}


@pytest.fixture(autouse=True)
def no_chat_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "DRSG_DIGEST_CHAT", "DRSG_DIGEST_MODEL", "DRSG_DIGEST_CODE_ONLY"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    commit_tree(root, FILES)
    return root


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(dims=8) as server:  # no api_key: the `url` chat provider sends none
        yield server


def snapshot_files(root: Path) -> dict[str, bytes]:
    return {name: (root / name).read_bytes() for name in ("drsg.toml", ".gitignore", ".mcp.json")}


def head(db: Path) -> int:
    with drsg_api.open(db) as opened:
        return opened.head()


def keys(drsg: Drsg, db: Path, plane: str) -> set[str]:
    ran = drsg("export", "--plane", plane, db=db)
    assert ran.code == 0, ran.err
    return {record["external_key"] for record in ran.json_lines() if "external_key" in record}


def test_a_fresh_repository_gets_all_four_steps(drsg: Drsg, repo: Path) -> None:
    db = repo / "graph.drsg"
    ran = drsg("init", str(repo), db=db)
    assert ran.code == 0, ran.err
    lines = ran.lines()
    assert len(lines) == 5, lines
    assert lines[4] == f"to keep plane 'proj' current as the tree changes: drsg --db {db} serve watch {repo}"
    assert lines[0].startswith(f"wrote {repo / 'drsg.toml'} with the [digest] defaults (")
    assert lines[1].startswith(f"created {repo / '.gitignore'}: ignores *.drsg, ")
    assert lines[2].startswith(f"wrote {repo / '.mcp.json'} the 'drsg' MCP server: ")
    exclude = repo / ".git" / "info" / "exclude"
    said = "(this clone's own rules: the entry names this machine's paths)"
    assert lines[2].endswith(f"; kept out of git in {exclude} {said}")
    assert lines[3].startswith(f"digested {repo} into plane 'proj' (created): ")
    assert "code only: no chat key — OPENAI_API_KEY is not set" in lines[3]

    # 1. drsg.toml: every [digest] default, each under its description, read back by the real loader
    config = repo / "drsg.toml"
    loaded = settings.load(str(config), environ={})
    for setting in settings.REGISTRY:
        if setting.section != "digest":
            continue
        assert loaded[setting.name] == setting.default, setting.name
        assert f"# {setting.help}" in config.read_text(), setting.name
        expected = "default" if setting.name == "digest.embed_provider" else f"config {config}"
        assert loaded.sources[setting.name] == expected, setting.name  # embed_provider: left unset on purpose
    shown = drsg("--config", str(config), "config", "--json", db=db)
    assert shown.code == 0, shown.err
    entries = {entry["name"]: entry for entry in shown.json_lines()}
    assert entries["digest.chunk_chars"]["value"] == 4000
    assert entries["digest.chunk_chars"]["source"] == f"config {config}"
    assert entries["digest.ignore_files"]["value"] == ["gitignore"]

    # 2. .gitignore: git itself ignores the database and every sidecar
    assert ignore_patterns() == (repo / ".gitignore").read_text().splitlines()[1:]
    for path in store_files(db):
        inside = path / "x" if path.suffix in (".hnsw", ".bm25", ".digest") else path
        ignored = subprocess.run(["git", "-C", str(repo), "check-ignore", "-q", str(inside)])
        assert ignored.returncode == 0, f"{inside} is not ignored"
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True)
    assert "graph.drsg" not in status.stdout

    # 3. .mcp.json: the command line a coding agent runs
    entry = json.loads((repo / ".mcp.json").read_text())["mcpServers"]["drsg"]
    assert entry["args"] == ["--db", str(db), "mcp"]
    assert Path(entry["command"]).is_absolute() and Path(entry["command"]).name == "drsg"
    assert Path(entry["command"]).is_file()

    # 4. the plane holds the code's facts, and no prose (no key: code only, no model)
    found = keys(drsg, db, "proj")
    assert found >= CODE_KEYS
    assert not any("Bletchley" in key for key in found)


def test_a_second_run_changes_nothing_and_says_so(drsg: Drsg, repo: Path) -> None:
    db = repo / "graph.drsg"
    first = drsg("init", str(repo), db=db)
    assert first.code == 0, first.err
    files, seq = snapshot_files(repo), head(db)
    again = drsg("init", str(repo), db=db)
    assert again.code == 0, again.err
    assert len(again.lines()) == 5
    for line in again.lines()[:4]:
        assert "already" in line or "unchanged" in line, line
    assert again.lines()[0].startswith("kept ")
    as_json = drsg("init", str(repo), "--json", db=db)
    assert as_json.code == 0, as_json.err
    steps = as_json.json_lines()
    assert [step["action"] for step in steps] == ["config", "gitignore", "mcp", "digest"]
    assert [step["status"] for step in steps] == ["kept", "unchanged", "unchanged", "unchanged"]
    assert steps[3]["seq"] is None and steps[3]["plane"] == "proj" and steps[3]["code_only"] is True
    assert snapshot_files(repo) == files
    assert head(db) == seq


def test_what_init_writes_is_not_drift_and_its_gitignore_names_only_drsgs_files(drsg: Drsg, tmp_path: Path) -> None:
    repo = tmp_path / "proj"
    commit_tree(repo, {**FILES, "logs/__init__.py": ""})  # the project's own package called logs
    db = repo / "graph.drsg"
    ran = drsg("init", str(repo), db=db)
    assert ran.code == 0, ran.err
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True)
    assert sorted(status.stdout.splitlines()) == ["?? .gitignore", "?? drsg.toml"]  # the two to commit
    card = drsg("plane", "show", "proj", "--json", db=db).json_lines()[0]["properties"]
    assert (card["synced_modified"], card["synced_untracked"]) == (0, 0)  # was 2 untracked: init's own files
    read = drsg("get", "@pkg.core.helper", "--plane", "proj", db=db)
    assert read.lines()[0] == f"synced: commit {card['synced_commit'][:12]}"  # no "… 2 untracked" on every read
    ignore = (repo / ".gitignore").read_text()
    assert "logs/" not in ignore and ".mcp.json" not in ignore  # a rule that could hide the project's files
    why = subprocess.run(["git", "-C", str(repo), "check-ignore", "-v", ".mcp.json"], capture_output=True, text=True)
    assert why.returncode == 0 and why.stdout.startswith(".git/info/exclude:")  # this clone's own rules only
    assert subprocess.run(["git", "-C", str(repo), "check-ignore", "-q", "logs/__init__.py"]).returncode == 1
    (repo / "pkg" / "core.py").write_text(FILES["pkg/core.py"] + "\n\ndef more():\n    pass\n")
    again = drsg("digest", str(repo), "-p", "proj", "--code-only", "--apply", db=db)
    assert again.code == 0, again.err
    card = drsg("plane", "show", "proj", "--json", db=db).json_lines()[0]["properties"]
    assert (card["synced_modified"], card["synced_untracked"]) == (1, 0)  # a real edit still counts


def test_a_tree_the_ignore_rules_mostly_withhold_is_warned_about(drsg: Drsg, tmp_path: Path) -> None:
    root = tmp_path / "gen"
    commit_tree(root, {"main.py": "X = 1\n", ".gitignore": "out/\n", **{f"out/g{i}.py": "Y = 1\n" for i in range(9)}})
    ran = drsg("init", str(root), db=root / "graph.drsg")
    assert ran.code == 0, ran.err  # init used to say nothing of it
    assert ran.err == (
        "warning: 9 of 10 files were withheld by ignore rules — .gitignore (9). If that is not what you meant, "
        "`--ignore-files` chooses which of them apply.\n"
    )
    as_json = drsg("init", str(root), "--json", "-p", "again", db=root / "graph.drsg").json_lines()
    assert as_json[3]["warning"].startswith("9 of 10 files were withheld by ignore rules — .gitignore (9)")


def test_the_database_is_in_dir_unless_db_is_given(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DRSG_DB", raising=False)
    monkeypatch.delenv("DRSG_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    ran = CliRunner().invoke(cli, ["init", str(repo)], catch_exceptions=False)
    assert ran.exit_code == 0, ran.stderr
    assert (repo / "graph.drsg").is_file() and not (tmp_path / "graph.drsg").exists()
    assert json.loads((repo / ".mcp.json").read_text())["mcpServers"]["drsg"]["args"][1] == str(repo / "graph.drsg")
    elsewhere = tmp_path / "other.drsg"
    monkeypatch.setenv("DRSG_DB", str(elsewhere))  # given by its variable counts as given
    moved = CliRunner().invoke(cli, ["init", str(repo), "-p", "again"], catch_exceptions=False)
    assert moved.exit_code == 0, moved.stderr
    assert elsewhere.is_file()
    assert json.loads((repo / ".mcp.json").read_text())["mcpServers"]["drsg"]["args"][1] == str(elsewhere)
    assert "updated in" in moved.stdout.splitlines()[2]


def test_a_gitignore_without_its_last_newline_keeps_its_lines(drsg: Drsg, repo: Path, db_path: Path) -> None:
    (repo / ".gitignore").write_text("node_modules/\n*.drsg.hnsw\n*.drsg")  # two of ours already, one unslashed
    ran = drsg("init", str(repo))
    assert ran.code == 0, ran.err
    missing = [p for p in ignore_patterns() if p not in ("*.drsg", "*.drsg.hnsw/")]
    assert (repo / ".gitignore").read_text() == "node_modules/\n*.drsg.hnsw\n*.drsg\n\n# drsg\n" + "\n".join(
        missing
    ) + "\n"
    assert ran.lines()[1] == f"updated {repo / '.gitignore'}: ignores {', '.join(missing)} (drsg's store)"
    again = drsg("init", str(repo))
    assert again.lines()[1] == f"{repo / '.gitignore'} already ignores drsg's files"


def test_an_existing_mcp_json_keeps_its_other_keys_and_servers(drsg: Drsg, repo: Path, db_path: Path) -> None:
    other = {"command": "npx", "args": ["-y", "some-server"], "env": {"A": "1"}}
    before = {"$schema": "x", "mcpServers": {"other": other, "drsg": {"command": "old", "args": []}}, "extra": [1, 2]}
    (repo / ".mcp.json").write_text(json.dumps(before))
    ran = drsg("init", str(repo))
    assert ran.code == 0, ran.err
    after = json.loads((repo / ".mcp.json").read_text())
    assert after["$schema"] == "x" and after["extra"] == [1, 2]
    assert after["mcpServers"]["other"] == other
    assert after["mcpServers"]["drsg"]["args"] == ["--db", str(db_path), "mcp"]
    assert list(after) == list(before)  # the file's own order is kept
    assert ran.lines()[2].startswith(f"updated in {repo / '.mcp.json'} the 'drsg' MCP server")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"mcpServers": {"x": 1},}', "is not valid JSON"),
        ("[1, 2]", "is not a JSON object"),
        ('{"mcpServers": []}', '"mcpServers" is not a JSON object'),
    ],
)
def test_a_broken_mcp_json_stops_it_before_anything_is_written(
    drsg: Drsg, repo: Path, db_path: Path, text: str, says: str
) -> None:
    (repo / ".gitignore").write_text("build/\n")
    (repo / ".mcp.json").write_text(text)
    ran = drsg("init", str(repo))
    assert ran.code == 2
    assert ran.out == ""
    assert len(ran.err.splitlines()) == 1
    assert f"{repo / '.mcp.json'} " in ran.err or f"{repo / '.mcp.json'}:" in ran.err
    assert says in ran.err and "fix it" in ran.err
    assert not (repo / "drsg.toml").exists()
    assert (repo / ".gitignore").read_text() == "build/\n"
    assert (repo / ".mcp.json").read_text() == text
    assert not db_path.exists() and not Path(f"{db_path}-lock").exists()


def test_what_the_digest_would_refuse_is_refused_before_anything_is_written(
    drsg: Drsg, tmp_path: Path, db_path: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.py").write_text("X = 1\n")
    untracked = drsg("init", str(plain), "--tracked-only")
    assert untracked.code == 2 and "is not in a git repository" in untracked.err
    bad = drsg("init", str(plain), "--ignore-files", "npmignore")
    assert bad.code == 2 and "'npmignore' is not gitignore or dockerignore" in bad.err
    (plain / "drsg.toml").write_text("[digest]\nchunk_chars = 0\n")
    broken = drsg("init", str(plain))
    assert broken.code == 2 and "digest.chunk_chars" in broken.err
    assert sorted(p.name for p in plain.iterdir()) == ["a.py", "drsg.toml"]
    assert not db_path.exists()


def test_a_missing_dir_or_a_file_is_a_usage_error(drsg: Drsg, tmp_path: Path, db_path: Path) -> None:
    gone = drsg("init", str(tmp_path / "nope"))
    assert gone.code == 2
    assert len(gone.err.splitlines()) == 1
    assert gone.err.startswith(f"error: {tmp_path / 'nope'} does not exist; name the repository's directory; see `")
    (tmp_path / "file.txt").write_text("x")
    afile = drsg("init", str(tmp_path / "file.txt"))
    assert afile.code == 2 and "is not a directory" in afile.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt"]
    assert not db_path.exists()


def test_code_only_when_asked_or_configured_and_the_model_reads_prose_when_it_can(
    drsg: Drsg, repo: Path, db_path: Path, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.scripted_model import ScriptedModel, World, WorldEntity, WorldRelation

    world = World(
        entities=[WorldEntity(["Engine"], ["Component"]), WorldEntity(["Bletchley Park"], ["Place"])],
        relations=[WorldRelation("Engine", "Bletchley Park", ["FIRST_RUN_AT"])],
    )
    ScriptedModel(world).install(fake)
    monkeypatch.setenv("DRSG_DIGEST_CHAT", fake.base_url)  # a base URL: a provider that takes no key
    monkeypatch.setenv("DRSG_DIGEST_MODEL", "fake-chat")
    asked = drsg("init", str(repo), "--code-only", "-p", "asked")
    assert asked.code == 0, asked.err
    assert asked.lines()[3].endswith("— code only (--code-only)")
    assert fake.requests_to("/chat/completions") == []
    monkeypatch.setenv("DRSG_DIGEST_CODE_ONLY", "true")
    configured = drsg("init", str(repo), "-p", "configured")
    assert configured.code == 0, configured.err
    assert "— code only (digest.code_only, env DRSG_DIGEST_CODE_ONLY)" in configured.lines()[3]
    assert fake.requests_to("/chat/completions") == []
    monkeypatch.delenv("DRSG_DIGEST_CODE_ONLY")
    full = drsg("init", str(repo), "-p", "full", "--json")
    assert full.code == 0, full.err
    step = full.json_lines()[3]
    assert step["code_only"] is False and step["why"].startswith("code and prose")
    assert fake.requests_to("/chat/completions")  # the README went to the model
    asked_of = json.dumps([request.json for request in fake.requests_to("/chat/completions")])
    assert "[digest]" not in asked_of  # drsg.toml (it may hold API keys) is drsg's, never prose for the model
    assert {"Bletchley Park", *CODE_KEYS} <= keys(drsg, db_path, "full")
    assert "Bletchley Park" not in keys(drsg, db_path, "asked")


def test_the_chat_key_is_found_where_the_chat_model_finds_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    assert chat_key("openai", settings.load(str(empty))) == ("OPENAI_API_KEY", False)
    with_key = tmp_path / "key.toml"
    with_key.write_text('[llm]\nDEEPSEEK_API_KEY = "sk-file"\n')
    assert chat_key("deepseek", settings.load(str(with_key))) == ("DEEPSEEK_API_KEY", True)
    assert chat_key("openai", settings.load(str(with_key))) == ("OPENAI_API_KEY", False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    assert chat_key(None, settings.load(str(empty))) == ("OPENAI_API_KEY", True)
    assert chat_key("ollama", settings.load(str(empty))) == (None, True)  # takes no key
    assert chat_key("http://127.0.0.1:9/v1", settings.load(str(empty))) == (None, True)


def test_the_generated_config_is_the_registry(tmp_path: Path) -> None:
    written = tomllib.loads(render_config())
    digest = {s.key: s.default for s in settings.REGISTRY if s.section == "digest" and s.key != "embed_provider"}
    assert {key: tuple(v) if isinstance(v, list) else v for key, v in written["digest"].items()} == digest
    assert list(written) == ["digest"]

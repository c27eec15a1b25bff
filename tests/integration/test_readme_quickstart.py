"""The README's quickstart prints what it says it prints: each `$ drsg …` line of its console block
runs through the real `drsg` command, in order, on a new database, and its output is compared with
the lines the README shows under it (scores to two decimals, the import's rate not at all)."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

from tests.support.server import clean_env, drsg_argv

ROOT = Path(__file__).resolve().parents[2]
_FLOAT = re.compile(r"-?\d+\.\d+")
_RATE = re.compile(r"\d+ line\(s\) in [\d.]+ s: [\d,]+ lines/s")


def quickstart() -> list[tuple[str, list[str]]]:
    """The quickstart's commands, each with the output lines the README shows for it."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Quickstart\n", 1)[1]
    block = section.split("```console\n", 1)[1].split("```", 1)[0]
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return steps


def _same(shown: str, printed: str) -> bool:
    """One line as the README shows it and as drsg printed it: equal, but for a float's last digits
    (another CPU may round an embedding differently) and an import's measured rate."""
    if _RATE.fullmatch(shown):
        return _RATE.fullmatch(printed) is not None
    if _FLOAT.split(shown) != _FLOAT.split(printed):
        return False
    pairs = zip(_FLOAT.findall(shown), _FLOAT.findall(printed), strict=True)  # the splits matched: as many
    return all(abs(float(a) - float(b)) <= 0.01 for a, b in pairs)


def test_the_readme_quickstart_prints_what_it_shows(tmp_path: Path) -> None:
    (tmp_path / "drsg").symlink_to(ROOT / "drsg")  # its paths are the repository's: drsg/data/sample.jsonl
    env = clean_env()
    steps = quickstart()
    assert 8 <= len(steps) <= 12, f"the quickstart has {len(steps)} commands; the README promises about 10"
    for command, shown in steps:
        if command == "source .venv/bin/activate":
            continue
        if command.startswith("export "):
            name, _, value = command.removeprefix("export ").partition("=")
            env[name] = value
            continue
        argv = shlex.split(command)
        assert argv[0] == "drsg", f"the quickstart runs only drsg, not: {command}"
        ran = subprocess.run(
            [*drsg_argv(), *argv[1:]], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
        assert ran.returncode == 0, f"{command}: {ran.stderr}"
        printed = ran.stdout.splitlines() + ran.stderr.splitlines()  # the README shows them interleaved
        unmatched = [line for line in shown if not any(_same(line, p) for p in printed)]
        assert not unmatched and len(printed) == len(shown), (
            f"README.md's quickstart shows for `{command}`:\n"
            + "\n".join(shown)
            + "\nbut drsg printed:\n"
            + "\n".join(printed)
            + "\nRun it again and paste what it prints."
        )
    assert (tmp_path / "quick.drsg").is_file()  # export DRSG_DB named the database every command used


def test_same_tolerates_only_rounding_and_the_rate() -> None:
    assert _same("  1.1879\tdijkstra\t[Person]", "  1.1901\tdijkstra\t[Person]")
    assert not _same("  1.1879\tdijkstra\t[Person]", "  1.1879\tada\t[Person]")
    assert not _same("  1.1879\tdijkstra\t[Person]", "  1.2879\tdijkstra\t[Person]")
    assert _same("39 line(s) in 0.1 s: 461 lines/s", "39 line(s) in 0.0 s: 4,140 lines/s")
    assert not _same("updated node #1 @ada (seq 3)", "updated node #1 @ada (seq 4)")

"""Summarise a py-spy ``--format raw`` profile: top functions by self and by inclusive samples.

    py-spy record -r 250 -f raw -o out/prof.txt -- .venv/bin/python -m tests.bench.bench_commits --case a --engine-only
    .venv/bin/python -m tests.bench.pyspy_top out/prof.txt [--top 25] [--lines] [--only _lead_one_group]

py-spy writes one line per distinct stack: ``frame;frame;…;leaf COUNT`` where a frame is
``function (file:line)``. Without ``--lines`` the line numbers are dropped so a function's samples
add up.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

_LINE = re.compile(r":\d+\)$")


def frame_name(frame: str, keep_lines: bool) -> str:
    return frame if keep_lines else _LINE.sub(")", frame)


def summarise(path: Path, top: int, keep_lines: bool, only: str | None = None) -> str:
    self_time: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for raw in path.read_text().splitlines():
        stack, _, count = raw.rpartition(" ")
        if not stack or not count.isdigit() or (only is not None and only not in stack):
            continue
        n = int(count)
        total += n
        frames = [frame_name(f, keep_lines) for f in stack.split(";")]
        self_time[frames[-1]] += n
        for f in set(frames):
            inclusive[f] += n
    scope = f" in stacks through {only!r}" if only else " (idle threads excluded)"
    out = [f"{path}: {total} samples{scope}", "", "self %  function"]
    out += [f"{100 * n / total:5.1f}  {f}" for f, n in self_time.most_common(top)]
    out += ["", "incl %  function"]
    out += [f"{100 * n / total:5.1f}  {f}" for f, n in inclusive.most_common(top)]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("profile", type=Path)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--lines", action="store_true", help="keep line numbers (per-line hot spots)")
    ap.add_argument("--only", help="keep only stacks with a frame containing this text, e.g. _lead_one_group")
    args = ap.parse_args()
    print(summarise(args.profile, args.top, args.lines, args.only))


if __name__ == "__main__":
    main()

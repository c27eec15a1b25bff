#!/usr/bin/env bash
# Profile the engine side of bench_commits' group commit (16 threads) and one-caller rows with py-spy
# (sampling, all threads) and print the top functions by self and inclusive samples. A profiled run's
# figures are the profiler's as much as the engine's: they are never recorded. py-spy is not a project
# dependency: install it anywhere (e.g. `python3 -m venv /tmp/tools && /tmp/tools/bin/pip install
# py-spy`) and point PYSPY at it, or have it on PATH. Without py-spy, the one-caller row is profiled
# with cProfile instead.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-.venv/bin/python}
OUT=tests/bench/out
mkdir -p "$OUT"
export DRSG_BENCH_NO_RECORD=1
PYSPY=${PYSPY:-$(command -v py-spy || true)}
if [[ -n "$PYSPY" ]]; then
  "$PYSPY" record -r 250 -f raw -o "$OUT/prof_a.txt" -- $PY -m tests.bench.bench_commits --only threads --commits16 32000 --commits64 0
  "$PYSPY" record -r 250 -f raw -o "$OUT/prof_b.txt" -- $PY -m tests.bench.bench_commits --only single --single 6000 --engine-only
  $PY -m tests.bench.pyspy_top "$OUT/prof_a.txt" --top 25
  # the group-commit leader alone (the other threads mostly wait for it):
  $PY -m tests.bench.pyspy_top "$OUT/prof_a.txt" --top 25 --lines --only _lead_one_group
  $PY -m tests.bench.pyspy_top "$OUT/prof_b.txt" --top 25
else
  echo "py-spy not found; profiling the one-caller row with cProfile" >&2
  $PY -m cProfile -s tottime -m tests.bench.bench_commits --only single --single 3000 --engine-only | head -45
fi

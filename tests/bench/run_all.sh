#!/usr/bin/env bash
# Run every benchmark; each prints drsg's figure beside raw py-lmdb's from the same run and
# appends a dated section (machine, CPU, Python) to tests/bench/RESULTS.md.
#   bash tests/bench/run_all.sh            # all of (a)–(d), about 10 minutes on 2 cores
#   QUICK=1 bash tests/bench/run_all.sh    # smaller sizes, for a smoke run (results not recorded)
#   PROFILE=1 bash tests/bench/run_all.sh  # also profile group commit and one caller with py-spy (profile.sh)
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-.venv/bin/python}
# The hybrid benchmark's judged corpus is WordNet, from Debian's wordnet-base.
if [[ ! -f /usr/share/wordnet/data.noun ]] && command -v apt-get >/dev/null && [[ $(id -u) == 0 ]]; then
  apt-get update -qq && apt-get install -y -qq wordnet-base >/dev/null
fi
if [[ "${QUICK:-0}" == 1 ]]; then
  export DRSG_BENCH_NO_RECORD=1
  $PY -m tests.bench.bench_commits --commits16 3200 --commits64 6400 --commits-procs 3200 --single 1000 --rounds 4
  $PY -m tests.bench.bench_asof --commits 50000 --samples 5000
  $PY -m tests.bench.bench_import --nodes 20000 --edges 40000
  $PY -m tests.bench.bench_index --quick --no-record
  $PY -m tests.bench.bench_recall --n 5000 --queries 200 --no-record
  $PY -m tests.bench.bench_embedder --n 200 --rounds 1 --no-record
  $PY -m tests.bench.bench_hybrid --quick
  $PY -m tests.bench.bench_fusion_fit --quick
  $PY -m tests.bench.bench_crawl --no-record
  $PY -m tests.bench.bench_feed --quick
  $PY -m tests.bench.bench_digest --no-record
  $PY -m tests.bench.bench_code --no-record
  $PY -m tests.bench.bench_c_plugin --files 100
  $PY -m tests.bench.bench_watch --trials 5 --checkouts 1 --idle 5 --phases 2
  $PY -m tests.bench.bench_catalog --no-record
  $PY -m tests.bench.bench_diff --sizes 2000,10000 --changes 10,100
  $PY -m tests.bench.bench_index_lag --quick --no-record
  $PY -m tests.bench.bench_kafka --commits 300 --rounds 1 --seconds 3
  $PY -c 'import kuzu' 2>/dev/null || $PY -m pip install --quiet -e '.[bench]'
  $PY -m tests.bench.bench_cypher --nodes 10000 --lookups 300 --scans 3 --no-record
  $PY -c 'import lancedb, chromadb' 2>/dev/null || $PY -m pip install --quiet -e '.[bench]'
  $PY -m tests.bench.bench_peers --quick --no-record
  exit 0
fi
$PY -m tests.bench.bench_commits
$PY -m tests.bench.bench_asof
$PY -m tests.bench.bench_import --cli
$PY -m tests.bench.bench_index
$PY -m tests.bench.bench_recall
$PY -m tests.bench.bench_embedder
$PY -m tests.bench.bench_hybrid
$PY -m tests.bench.bench_fusion_fit
$PY -m tests.bench.bench_crawl
$PY -m tests.bench.eval_ask --scripted
$PY -m tests.bench.bench_feed
$PY -m tests.bench.bench_rpc
$PY -c 'import kuzu, lancedb, chromadb' 2>/dev/null || $PY -m pip install --quiet -e '.[bench]'
$PY -m tests.bench.bench_peers
if [[ "${PROFILE:-0}" == 1 ]]; then
  bash tests/bench/profile.sh
fi
$PY -m tests.bench.bench_digest
$PY -m tests.bench.bench_code
make -s plugins && $PY -m tests.bench.bench_c_plugin
$PY -m tests.bench.bench_watch
$PY -m tests.bench.bench_catalog
$PY -m tests.bench.bench_diff
$PY -m tests.bench.bench_index_lag
$PY -m tests.bench.bench_kafka
# Cypher beside Kùzu, a benchmark-only dependency (pyproject's `bench` extra)
$PY -c 'import kuzu' 2>/dev/null || $PY -m pip install --quiet -e '.[bench]'
$PY -m tests.bench.bench_cypher

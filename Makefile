# Two entry points (see README): `make demo` and `make test`. Each sets up .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DRSG := $(BIN)/drsg
DEMO_DB := demo/graph.drsg

.PHONY: setup demo test lint bench clean plugins browser databases docs

# setup.py builds the C modules (workers/_fusion.c, store/_walk.c, store/_bulk.c) in place: a change to one reinstalls.
$(BIN)/drsg: pyproject.toml setup.py workers/_fusion.c store/_walk.c store/_records.c store/_walk.h store/_bulk.c store/_bulklines.c store/_bulkrun.c store/_bulkscan.c store/_bulkmap.c store/_bulk.h store/_lmdb.h
	$(PYTHON) -m venv $(VENV)
	# the setuptools pyproject's build-system names, in the venv too: `setup.py build_ext --inplace` (a bench's --tree) needs it
	$(BIN)/pip install --quiet --upgrade pip 'setuptools>=77'
	$(BIN)/pip install --quiet -e '.[test,kafka]'
	touch $(BIN)/drsg

setup: $(BIN)/drsg

# The main job on the embedded default: no API key, no network.
demo: setup
	rm -rf demo && mkdir -p demo
	$(DRSG) --db $(DEMO_DB) import drsg/data/sample.jsonl --plane pioneers --create-plane
	$(DRSG) --db $(DEMO_DB) plane show pioneers
	$(DRSG) --db $(DEMO_DB) neighbors @turing --plane pioneers
	$(DRSG) --db $(DEMO_DB) node put ada --plane pioneers -P 'title="Countess of Lovelace"'
	$(DRSG) --db $(DEMO_DB) node delete @dijkstra --plane pioneers
	$(DRSG) --db $(DEMO_DB) log
	@echo "--- ada now, and as of commit 2 (before the update):"
	$(DRSG) --db $(DEMO_DB) get @ada --plane pioneers --json
	$(DRSG) --db $(DEMO_DB) get @ada --plane pioneers --as-of 2 --json
	@echo "--- dijkstra is gone now, but still there as of commit 3:"
	$(DRSG) --db $(DEMO_DB) get @dijkstra --plane pioneers || echo '(as expected: deleted now)'
	$(DRSG) --db $(DEMO_DB) get @dijkstra --plane pioneers --as-of 3 --json
	@echo "--- search: keyword (BM25) and meaning (local MiniLM embeddings, offline)"
	$(DRSG) --db $(DEMO_DB) index keyword Person note --plane pioneers
	$(DRSG) --db $(DEMO_DB) search 'SEARCH (p:Person) ON note MATCHING "algorithms" TOPK 3' --plane pioneers
	$(DRSG) --db $(DEMO_DB) vectorize --plane pioneers --label Person --from note
	$(DRSG) --db $(DEMO_DB) search 'SEARCH (p:Person) ON embedding NEAR "breaking enemy codes in wartime" TOPK 3' --plane pioneers
	@echo "--- hybrid: meaning + keywords + the graph around the best hits, each score explained"
	$(DRSG) --db $(DEMO_DB) hybrid "breaking enemy codes in wartime" --plane pioneers --label Person --vector embedding --keyword note --graph-hops 1 --k 3 --explain
	$(DRSG) --db $(DEMO_DB) stats

# mypy cannot follow the editable install's folder-to-package mapping (pyproject's package-dir), so it
# reads the package through a tree of links laid out as installed: build/typecheck/drsg/<layer>.
LAYERS := kernel plan models store workers pipeline feed surfaces
TYPES := build/typecheck
lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	rm -rf $(TYPES) && mkdir -p $(TYPES)/drsg
	for path in drsg/* $(LAYERS); do ln -s "$(CURDIR)/$$path" $(TYPES)/drsg/; done
	MYPYPATH=$(TYPES) $(BIN)/mypy -p drsg
	MYPYPATH=$(TYPES) $(BIN)/mypy --strict --follow-imports=silent -p drsg.kernel -p drsg.store -p drsg.plan -p drsg.workers  # the layers everything stands on, and the plans they run
	MYPYPATH=$(TYPES) $(BIN)/mypy --strict --follow-imports=silent -p drsg.api  # the public API (what it calls is checked above)

# The WebAssembly parser plugins (plugins/README.md): toolchain from Debian when missing, sources from
# pinned PyPI sdists, jco from the committed npm lockfile; build/plugins/<name>.wasm. Incremental.
plugins: setup
	plugins/build/toolchain.sh
	$(MAKE) --no-print-directory -f plugins/build/Makefile PY=$(CURDIR)/$(BIN)/python

# Debian's chromium for the dashboard's end-to-end tests (installed when missing, as the toolchain is).
browser:
	tests/support/chromium.sh

# The catalog tests' database servers (PostgreSQL, MariaDB) from Debian when missing; the tests
# start private throwaway instances of them (tests/support/db_servers.py).
databases:
	tests/support/install_databases.sh

# The whole test suite (what CI runs).
test: lint plugins browser databases
	$(BIN)/python -m pytest -q

# docs/reference/: the CLI's help, the settings registry and the JSON-RPC methods, generated from the
# code (tests/unit/test_docs.py fails when the committed pages are stale).
docs: setup
	$(BIN)/python -m drsg.surfaces.cli.reference

bench: setup
	bash tests/bench/run_all.sh

clean:
	rm -rf $(VENV) demo build *.egg-info

# dpportal: `make run` starts the app, `make test` runs the suite. Both set up what they need.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000

.PHONY: run test test-fast dev-venv bench bench-docs bench-fidelity bench-quick bench-pgm bench-pgm-grid bench-pgm-repeat bench-venv bench-scale bench-throughput bench-relations bench-tables venv clean audit

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	touch $@

# Tests, linting and the browser tools on top (requirements-dev.txt): make test and make test-fast only.
$(VENV)/.dev-installed: $(VENV)/.installed requirements-dev.txt
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

dev-venv: $(VENV)/.dev-installed

run: venv
	PY=$(PY) PORT=$(PORT) ./scripts/run.sh

# The suite on TEST_WORKERS pytest-xdist workers (a file's tests stay on one worker), then the tests with a
# wall-clock bound (marker serial, tests/conftest.py) alone; TEST_WORKERS=1: one pass, one process.
TEST_WORKERS ?= 2
test: dev-venv
	./scripts/ensure-system-packages.sh
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
ifeq ($(TEST_WORKERS),1)
	$(PY) -m pytest -q
else
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not serial"; a=$$?; \
	$(PY) -m pytest -q -m serial; b=$$?; test $$a -eq 0 -a $$b -eq 0
endif

# The suite without browsers, live servers, workers or system services (pytest markers in pytest.ini).
test-fast: dev-venv
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m pytest -q -m "not browser and not services and not slow"

clean:
	rm -rf $(VENV) var test-artifacts

# Privacy audits at full power (tests/privacy at fast settings run in `make test`); figures in
# docs/privacy-model.md.
audit: dev-venv
	DPPORTAL_AUDIT=full $(PY) -m pytest -q tests/privacy
	DPPORTAL_AUDIT=full $(PY) -m tests.privacy.table

# Benchmarks (slow: not part of `make test`). Peers run in their own venv so the product never
# depends on smartnoise-synth. A run's rows go to benchmarks/out/; the committed ones, in docs/data/, become
# docs/benchmarks/{full,pgm,fidelity}.md through `make bench-docs`. Each paper's reproduction: docs/benchmarks/<mechanism>.md.
BENCH_VENV := .venv-bench
$(BENCH_VENV)/.installed: requirements-bench.txt
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install -q --upgrade pip
	$(BENCH_VENV)/bin/python -m pip install -q -r requirements-bench.txt
	touch $@

bench-venv: $(BENCH_VENV)/.installed

# docs/benchmarks/*.md from the runs committed in docs/data/ (seconds; no release runs)
bench-docs: venv
	$(PY) -m benchmarks.report

bench-quick: venv bench-venv
	$(PY) -m benchmarks.harness.compare --quick --jobs 2

# AIM, MST and the Gaussian baseline against SmartNoise's, each pair started together (benchmarks/out/pgm-NAME.md)
bench-pgm: venv bench-venv
	$(PY) -m benchmarks.harness.pgm_compare

# the grid: 6 tables x epsilon 0.1 / 1 / 10, AIM / MST / Gaussian baseline vs SmartNoise (hours on 2 cores;
# resumable: add --resume) -> benchmarks/out/pgm-grid.jsonl; committed as docs/data/benchmarks-grid.jsonl
bench-pgm-grid: venv bench-venv
	$(PY) -m benchmarks.harness.pgm_compare --plan grid --name grid --timeout 900

# the grid's closest AIM comparisons, 5 repetitions each (about 20 min) -> docs/data/benchmarks-repeat.jsonl
bench-pgm-repeat: venv bench-venv
	$(PY) -m benchmarks.harness.pgm_repeat

# the downloaded file at full resolution against the sampling floor: dpportal's column model, the coarse one
# and SmartNoise's own transformers, 4 tables x MST / AIM (about an hour) -> docs/benchmarks/fidelity.md
bench-fidelity: venv bench-venv
	$(PY) -m benchmarks.harness.fidelity
	$(PY) -m benchmarks.harness.fidelity --tables bank_marketing german_credit --models suggested coarse --repeat 3
	$(PY) -m benchmarks.harness.fidelity --tables adult --mechanisms aim --models suggested coarse --param workload=target --param target=label
	$(PY) -m benchmarks.harness.fidelity --write-doc

bench: venv bench-venv
	$(PY) -m benchmarks.harness.fidelity
	$(PY) -m benchmarks.harness.compare --jobs 2
	$(PY) -m benchmarks.harness.pgm_compare
	$(PY) -m benchmarks.harness.pgm_compare --plan grid --name grid --timeout 900
	$(PY) -m benchmarks.harness.pgm_repeat
	$(PY) -m benchmarks.reproduce.kdtree_perf
	$(PY) -m benchmarks.reproduce.kdtree_figures
	$(PY) -m benchmarks.reproduce.kdtree_classification
	$(PY) -m benchmarks.reproduce.pmse_perf
	$(PY) -m benchmarks.reproduce.pmse_reproduce
	$(PY) -m benchmarks.reproduce.pmse_table1
	$(PY) -m benchmarks.reproduce.privhp_throughput
	$(PY) -m benchmarks.reproduce.privhp_tradeoff
	$(PY) -m benchmarks.reproduce.density_lp_boolean
	$(PY) -m benchmarks.reproduce.density_lp_continuous
	$(PY) -m benchmarks.reproduce.density_lp_adult
	$(PY) -m benchmarks.reproduce.dpmerf_grid
	$(PY) -m benchmarks.reproduce.dpmerf_table1
	$(PY) -m benchmarks.system.evaluation_speed

# Scale-out: PostgreSQL, Redis, gunicorn and 1, 2, 4 workers on loopback; a mixed burst through
# the API; throughput, p50/p95 and the ledger check (docs/operations.md). Not part of `make test`.
# relations on a 39-column table (the recommended releases, MST, SmartNoise MST and AIM side by side; about 20 min)
# -> docs/data/relations.jsonl, docs/benchmarks/relations.md
bench-relations: venv bench-venv
	$(PY) -m benchmarks.system.relations --peers mst aim --peer-timeout 600
	$(PY) -m benchmarks.system.relations --write-doc

# the tables release on adult: coverage of its 95% intervals over 200 runs, RMSE per cell against each table
# measured alone (dpportal's Gaussian and OpenDP's); about 20 s -> docs/data/tables.json, docs/benchmarks/tables.md
bench-tables: venv
	$(PY) -m benchmarks.system.tables --runs 200 --epsilon 0.1 1 --out docs/data/tables.json

bench-scale: venv
	./scripts/ensure-system-packages.sh
	$(PY) -m benchmarks.system.scale --threads 1 --repeat 3

# 1 then 2 workers, each with its own DATA_DIR (no shared disk: PostgreSQL, Redis and moto's S3 on loopback),
# a mixed batch through the API -> jobs/hour, benchmarks/out/throughput.json (docs/operations.md)
bench-throughput: dev-venv
	./scripts/ensure-system-packages.sh
	$(PY) -m benchmarks.system.throughput $(THROUGHPUT_ARGS)

# dpportal: `make run` starts the app, `make test` runs the suite. Both set up what they need.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000

.PHONY: run test test-fast bench bench-quick venv clean

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt
	touch $@

venv: $(VENV)/.installed

run: venv
	PY=$(PY) PORT=$(PORT) ./scripts/run.sh

test: venv
	./scripts/ensure-system-packages.sh
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) var test-artifacts

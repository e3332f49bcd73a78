# Two commands do all set-up on a fresh machine:  `make demo`  and  `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

LOCK   := requirements.lock

.PHONY: demo test lint bench clean lock test-latest fuzz

# Installs exactly the versions in the committed lock (pip constraints), so a fresh clone gets what CI tested.
$(STAMP): pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c $(LOCK) -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)  ## the main job on a bundled example
	$(BIN)/solar-opt --lift-einsum --fuse --sol=h100 examples/mlp.sir -o /dev/null

test: $(STAMP)  ## every test: pytest (unit, property) and lit (golden FileCheck tests)
	$(BIN)/ruff check .
	$(BIN)/pytest -n 2 tests/unit
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/lit -q tests/lit

# Refreshes the lock to the newest versions pyproject allows, rebuilds .venv from it and runs every test.
lock:
	bash .ci/lock
	rm -rf $(VENV)
	$(MAKE) test

# Not part of CI: the newest versions the ranges allow, in a separate venv, against the tests that follow
# other projects' releases most closely (the model corpus and the LLM tests). Run it before `make lock`.
LATEST := .venv-latest
test-latest:
	$(PYTHON) -m venv $(LATEST)
	$(LATEST)/bin/pip install -q --upgrade pip
	$(LATEST)/bin/pip install -q --upgrade --upgrade-strategy eager -e '.[dev]'
	$(LATEST)/bin/pip list --format=freeze 2>/dev/null | grep -iE '^(torch|transformers|jax|numpy|numba)=='
	$(LATEST)/bin/pytest -n 2 tests/unit/test_model_corpus.py $$(ls tests/unit/test_llm*.py)
	PATH="$(abspath $(LATEST)/bin):$$PATH" $(LATEST)/bin/lit -q tests/lit/solar-llm

# Not part of CI: the fuzz tests with 5,000 fresh examples each instead of the suite's fixed few (docs/errors.md).
fuzz: $(STAMP)
	SOLAR_FUZZ_EXAMPLES=5000 $(BIN)/pytest -q tests/unit/test_fuzz.py tests/unit/test_frontend_fuzz.py \
		tests/unit/test_fuzz_llm_configs.py tests/unit/test_fuzz_sweep_specs.py tests/unit/test_fuzz_api_arguments.py

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/pip install -q -c $(LOCK) -e '.[bench]'
	$(BIN)/python benchmarks/parse.py

clean:
	rm -rf $(VENV) $(LATEST) build *.egg-info

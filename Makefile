# Two commands do all set-up on a fresh machine:  `make demo`  and  `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)  ## the main job on a bundled example
	$(BIN)/solar-opt --lift-einsum --fuse --sol=h100 examples/mlp.sir -o /dev/null

test: $(STAMP)  ## every test: pytest (unit, property) and lit (golden FileCheck tests)
	$(BIN)/ruff check .
	$(BIN)/pytest -n 2 tests/unit
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/lit -q tests/lit

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/python benchmarks/parse.py

clean:
	rm -rf $(VENV) build *.egg-info

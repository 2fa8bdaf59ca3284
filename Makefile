# `make test` runs the whole suite; `make demo` is the main job (validate problems, judge a sample).
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_VERSION ?= 2.13.0

.PHONY: venv system-deps test lint demo bench clean

$(BIN)/kjudge: pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first and pinned, so pip takes the local CPU wheel instead of a CUDA build
	$(BIN)/pip install -q torch==$(TORCH_VERSION)
	$(BIN)/pip install -q -e '.[triton,tilelang,postgres,dev]'
	touch $@

venv: $(BIN)/kjudge

system-deps:
	@command -v bwrap >/dev/null || (apt-get update -qq && apt-get install -y -qq bubblewrap)

lint: venv
	$(BIN)/ruff check .

test: venv system-deps
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -p no:cacheprovider tests

demo: venv system-deps
	$(BIN)/kjudge problem validate problems/*
	$(BIN)/kjudge judge problems/vector_add problems/vector_add/solutions/AC/loop.cpp

bench: venv
	$(BIN)/python bench/judge_overhead.py --runs 5 --write

clean:
	rm -rf $(VENV) build *.egg-info

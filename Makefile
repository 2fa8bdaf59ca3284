# One command for the tests (`make test`) and one for the main job (`make serve`).
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_VERSION ?= 2.13.0

.PHONY: venv test lint serve bench clean

$(BIN)/kjudge: pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first and pinned, so pip takes the local CPU wheel instead of a CUDA build
	$(BIN)/pip install -q torch==$(TORCH_VERSION)
	$(BIN)/pip install -q -e '.[triton,tilelang,dev]'
	touch $@

venv: $(BIN)/kjudge

system-deps:
	@command -v bwrap >/dev/null || (apt-get update -qq && apt-get install -y -qq bubblewrap) || \
	    echo "bubblewrap not installed: the bwrap sandbox tests will be skipped"

lint: venv
	$(BIN)/ruff check .

test: venv system-deps
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -p no:cacheprovider tests

serve: venv
	$(BIN)/kjudge problem list

bench: venv
	$(BIN)/python bench/judge_overhead.py

clean:
	rm -rf $(VENV) build *.egg-info

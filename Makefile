# `make serve` runs the judge with its embedded defaults; `make test` runs the whole suite.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
TORCH_VERSION ?= 2.13.0

EDITOR_DIR := judge/web/editor
EDITOR_JS := judge/web/static/editor.js

.PHONY: venv system-deps editor test lint serve demo bench clean

$(BIN)/kjudge: pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first and pinned, so pip takes the local CPU wheel instead of a CUDA build
	$(BIN)/pip install -q torch==$(TORCH_VERSION)
	$(BIN)/pip install -q -e '.[triton,tilelang,postgres,dev]'
	touch $@

venv: $(BIN)/kjudge

# the submit form's code editor: CodeMirror 6 from the npm registry, pinned by the lock file,
# bundled by esbuild into the static files (served with the page, no CDN)
$(EDITOR_JS): $(EDITOR_DIR)/package-lock.json $(EDITOR_DIR)/editor.js $(EDITOR_DIR)/licenses.js
	@command -v npm >/dev/null || (apt-get update -qq && apt-get install -y -qq nodejs npm)
	cd $(EDITOR_DIR) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error \
	    && npm run --silent build && node licenses.js

editor: $(EDITOR_JS)

system-deps:
	@command -v bwrap >/dev/null || (apt-get update -qq && apt-get install -y -qq bubblewrap)
	@command -v redis-server >/dev/null || (apt-get update -qq && apt-get install -y -qq redis-server)
	@command -v dockerd >/dev/null || (apt-get update -qq && apt-get install -y -qq docker.io)
	@command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)
	@# the docker sandbox tests need a running engine and the local test image
	@docker info >/dev/null 2>&1 || (mkdir -p var && \
	    (dockerd --iptables=false --bridge=none > var/dockerd.log 2>&1 &) && \
	    for i in $$(seq 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done)
	@bash tests/docker_image.sh >/dev/null
	@# large timed inputs are released in huge pages where shared memory may use them on request
	@# (judge/measure/release.py); `advise` changes nothing for memory that does not ask
	@grep -q '\[never\]' /sys/kernel/mm/transparent_hugepage/shmem_enabled 2>/dev/null && \
	    (echo advise > /sys/kernel/mm/transparent_hugepage/shmem_enabled) 2>/dev/null || true
	@# the tests use PostgreSQL on 127.0.0.1:5432; start the local cluster if it is down
	@pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null || \
	    pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql) main start 2>/dev/null || \
	    echo "PostgreSQL is not running on 127.0.0.1:5432: its tests will fail"

lint: venv
	$(BIN)/ruff check .

# The tests that read measured times (marked `quiet`) run alone, after the others; those run on
# TEST_WORKERS processes, as many as the CPUs and one more, which keeps the CPUs busy while some
# tests wait on servers and workers (measured with two CPUs: 98 % busy; more processes gain
# nothing). Both parts run; either failing fails the target.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
# No test of the parallel part reads a measured time, so its judgings time each point for at most
# PARALLEL_POINT_S (the quiet part and the hostile tests everywhere: tests/conftest.py's 1 s):
# the same timing code, a quarter of its calls. `worksteal` hands a worker that runs out the
# tests another has not started, so that no worker ends long after the others.
PARALLEL_POINT_S ?= 0.3
# -rfEs: the failures and errors, and each skipped test with its reason (a backend a test does not
# apply to, a CUDA device that is not there)
PYTEST := $(BIN)/python -m pytest -q -rfEs -p no:cacheprovider --durations=30

test: venv system-deps editor
	$(BIN)/ruff check .
	KJUDGE_MAX_POINT_S=$(PARALLEL_POINT_S) $(PYTEST) -n $(TEST_WORKERS) --dist worksteal \
	    -m "not quiet" tests; parallel=$$?; \
	$(PYTEST) -m quiet tests; quiet=$$?; \
	test $$parallel -eq 0 && test $$quiet -eq 0

serve: venv system-deps
	@$(MAKE) --no-print-directory editor || echo "the editor was not built (no npm registry?): the submit form is a plain textarea"
	$(BIN)/kjudge serve

demo: venv system-deps
	$(BIN)/kjudge problem validate problems/*
	$(BIN)/kjudge judge problems/vector_add problems/vector_add/solutions/AC/loop.cpp

bench: venv
	$(BIN)/python bench/judge_overhead.py --runs 5 --write
	$(BIN)/python bench/service_load.py --write

clean:
	rm -rf $(VENV) build *.egg-info $(EDITOR_DIR)/node_modules $(EDITOR_JS) judge/web/static/editor.LICENSES.txt

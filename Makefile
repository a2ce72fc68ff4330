# The two README commands, plus a few helpers.
#   make run    venv, install, migrate, demo data, dev server running jobs in a background
#               thread (eager Celery, no Redis; README "Quickstart") (http://127.0.0.1:8000/)
#   make test   the whole test suite (slow, browser and Celery tests included), on
#               PYTEST_WORKERS processes (2; 0 for one)
#
# `make test` uses $DATABASE_URL when set; otherwise PostgreSQL on 127.0.0.1:5432 when it
# answers (PG_URL), else the SQLite fallback (PostgreSQL-only tests then skip with a reason).

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
PG_URL ?= postgres://postgres@127.0.0.1:5432/blindspot
PYTEST_ARGS ?=
# The suite runs on this many processes (pytest-xdist; each its own test database, Celery queue
# and live server), a whole test file to a process, in the order tests/conftest.py puts them
# (files with slow tests first; xdist's own reorder would put the one-test files, the slowest
# ones among them, last); 0 runs it in this one.
PYTEST_WORKERS ?= 2
DEMO_ENV := DEBUG=1 CELERY_TASK_ALWAYS_EAGER=1

.PHONY: help venv run test lint bench ci clean

help:
	@echo "make run    - venv, install, migrate, demo data, server on http://$(HOST):$(PORT)/"
	@echo "make test   - the test suite (PYTEST_ARGS='-k claim' to narrow it)"
	@echo "make lint   - ruff check, ruff format --check, lint-imports, makemigrations --check"
	@echo "make bench  - claim latency benchmark on PostgreSQL (BENCH_ARGS=--quick)"
	@echo "make ci     - what CI runs (.ci/run)"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Reinstall only when the dependencies change.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.14.1 torchvision==0.29.1
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $@

venv: $(VENV)/.installed

run: venv
	$(DEMO_ENV) $(BIN)/python manage.py migrate --noinput
	$(DEMO_ENV) $(BIN)/python manage.py demo --url http://$(HOST):$(PORT)/
	$(DEMO_ENV) $(BIN)/python manage.py demo_recipes
	$(DEMO_ENV) BLINDSPOT_JOBS_IN_BACKGROUND=1 $(BIN)/python manage.py runserver --noreload $(HOST):$(PORT)

test: venv
	@url="$${DATABASE_URL:-}"; \
	if [ -z "$$url" ] && $(BIN)/python -c \
	    "import socket; socket.create_connection(('127.0.0.1', 5432), 1)" 2>/dev/null; then \
	  url="$(PG_URL)"; \
	fi; \
	if [ -n "$$url" ]; then export DATABASE_URL="$$url"; echo "make test: $$url"; \
	else echo "make test: no PostgreSQL on 127.0.0.1:5432, using SQLite"; fi; \
	rc=0; DEBUG=1 $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS) || rc=$$?; \
	if [ $$rc -eq 5 ]; then \
	  echo "make test: pytest collected no tests (exit 5)"; \
	  if [ -n "$${CI:-}" ] && [ "$${CI}" != "false" ]; then exit 1; fi; \
	  rc=0; \
	fi; \
	exit $$rc

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	DEBUG=1 $(BIN)/python manage.py makemigrations --check --dry-run

bench: venv
	$(BIN)/python benchmarks/claim_latency.py $(BENCH_ARGS)

ci:
	CI=true bash .ci/run

clean:
	rm -rf $(VENV)

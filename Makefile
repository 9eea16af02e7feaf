# gpurt.runtime_gate: `make demo` runs the demo audit, `make test` runs every test.
SHELL := /bin/bash
# A pyenv shim whose version is not active prints a page to stderr: each candidate runs quietly.
ifndef PYTHON
PYTHON := $(shell for p in python3.13 python3.12 python3.11 python3; do \
	command -v $$p >/dev/null && $$p -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null && { echo $$p; break; }; done)
endif
VENV ?= .venv
BIN := $(VENV)/bin
# Binaries are shared between clones on one machine, so CI fetches them once.
GPURT_CACHE ?= $(HOME)/.cache/gpurt-runtime-gate
# So is the default venv: .venv links to one in GPURT_CACHE per Python and requirements, so that a fresh clone
# (CI) installs nothing a clone before it installed (a warm install from pip's cache took 179 s here). VENV=DIR
# uses DIR, and a .venv that is a directory (an older checkout) stays as it is.
ifeq ($(VENV),.venv)
SHARED_VENV := $(GPURT_CACHE)/venvs/$(shell { $(PYTHON) -c 'import sys; print(sys.version)' && \
	cat requirements.txt requirements-test.txt; } 2>/dev/null | sha256sum | cut -c1-16)
# two clones installing into it at once wait for each other
LOCKED := $(shell command -v flock >/dev/null && echo flock $(GPURT_CACHE)/venvs/.lock)
endif
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export PATH := $(CURDIR)/$(BIN):$(PATH)

# The oldest controller the collection claims (requirements-oldest.txt) on Python 3.10, and an
# unsupported one (ansible-core 2.15 on Python 3.9) that must fail at play start saying why. Their
# venvs are shared between clones like the binaries. Without a python3.10 the oldest ansible-core
# runs on $(PYTHON) (it supports 3.10-3.12); without a python3.9 that test skips, saying so.
# (A pyenv shim can exist without its version active, so each candidate must run.)
find_python = $(shell for p in $(HOME)/.pyenv/versions/$(1).*/bin/python$(1) $$(command -v python$(1)); do \
	"$$p" -c 'import sys; sys.exit(sys.version_info[:2] != ($(subst .,$(comma),$(1))))' 2>/dev/null && { echo "$$p"; break; }; done)
comma := ,
OLDEST_PYTHON ?= $(or $(call find_python,3.10),$(PYTHON))
UNSUPPORTED_PYTHON ?= $(call find_python,3.9)
OLDEST_CORE := $(shell sed -n 's/^ansible-core==//p' requirements-oldest.txt)
OLDEST_VENV ?= $(GPURT_CACHE)/controllers/core-$(OLDEST_CORE)-$(notdir $(OLDEST_PYTHON))
UNSUPPORTED_VENV ?= $(GPURT_CACHE)/controllers/core-2.15-python3.9
# The demo audit, the audit and bootstrap playbooks (cluster listing included), the remediation role
# (check mode, write, idempotence; tomlkit), the list modules in the controller process and as modules,
# the gather's host_vars (templating), and the installed tarball run by FQCN, on the oldest controller.
OLDEST_TESTS := tests/integration/test_audit_playbook.py tests/integration/test_validate_bootstrap.py \
	tests/integration/test_containerd_runtime_role.py tests/integration/test_remediate_rollout.py \
	tests/integration/test_outcomes.py tests/integration/test_cluster_modules.py \
	tests/integration/test_release.py tests/integration/test_gather_host_vars.py -k "test_demo_inventory or per_node_verdicts or listed_once \
	or good_template_on_2x or against_a_live_cluster or nodeadm or by_fqcn or controller or idempotent or comments_and_layout \
	or one_host_batches or failed_restart or bad_value or no_cluster_access or become_environment or host_vars"

.PHONY: setup go-binaries demo test test-oldest unit integration sanity lint bench build clean

setup: $(VENV)/.installed .cache/containerd/2.1/containerd go-binaries collection-link java

# The demo's own prerequisites, and nothing more: the controller's packages (requirements.txt) but the kubernetes
# client (the demo reads its RuntimeClasses from manifests, and audit.yml and remediate.yml import it only for a
# cluster; it is 26 of the 38 packages, measured 95 s of a cold install), Debian's containerd 1.6/1.7/2.1 (the
# demo nodes' binaries) and the checkout as the collection.
.PHONY: demo-setup
demo-setup: $(VENV)/.demo-installed .cache/containerd/2.1/containerd collection-link

# The shared venv is made where it lives (its scripts name their Python by that path), then linked.
.PHONY: venv-link
venv-link:
	@test -n "$(PYTHON)" || { echo "need Python 3.11+ on the controller" >&2; exit 1; }
ifdef SHARED_VENV
	@if [ ! -e $(VENV) ] && [ ! -L $(VENV) ]; then mkdir -p $(GPURT_CACHE)/venvs && \
	  $(LOCKED) sh -c 'test -x $(SHARED_VENV)/bin/python || $(PYTHON) -m venv $(SHARED_VENV)' && \
	  ln -s $(SHARED_VENV) $(VENV) && echo "$(VENV) links to $(SHARED_VENV), shared by this machine's clones"; fi
endif

$(VENV)/.installed: requirements.txt requirements-test.txt | venv-link
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(LOCKED) $(BIN)/pip install -q --upgrade pip
	$(LOCKED) $(BIN)/pip install -q -r requirements-test.txt
	touch $@ $(VENV)/.demo-installed

$(VENV)/.demo-installed: requirements.txt | venv-link
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	grep -v '^kubernetes' requirements.txt | $(LOCKED) $(BIN)/pip install -q -r /dev/stdin
	touch $@

.cache/containerd/2.1/containerd:
	tools/fetch-containerd $(GPURT_CACHE)/containerd
	mkdir -p .cache
	ln -sfn $(GPURT_CACHE)/containerd .cache/containerd

# containerd 2.2/2.3/2.4, crictl, etcd, kube-apiserver, kube-scheduler and kwok, built from the Go
# module proxy once per version into $(GPURT_CACHE)/go-bin (cold: see docs/development.md), linked in .cache/bin.
go-binaries:
	GPURT_CACHE=$(GPURT_CACHE) tools/build-go-binaries .cache/bin

# ansible-rulebook (the event-driven gate's tests) runs its rules engine on a Java 17 runtime: Debian's package.
.PHONY: java
java:
	@java -version 2>&1 | grep -q 'version "\(1[7-9]\|2[0-9]\)' || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q openjdk-17-jre-headless; \
	  else echo "ansible-rulebook needs a Java 17 runtime: install openjdk-17-jre-headless" >&2; exit 1; fi; }

# The checkout is the collection that ansible.cfg finds first. A copy installed there (ansible-galaxy run in
# the checkout without -p) would shadow the checkout: it is replaced by the link, saying so.
COLLECTION_LINK := .collections/ansible_collections/gpurt/runtime_gate
.PHONY: collection-link
collection-link:
	@if [ "$$(readlink $(COLLECTION_LINK))" != ../../.. ]; then \
	  if [ -e $(COLLECTION_LINK) ] || [ -L $(COLLECTION_LINK) ]; then \
	    echo "$(COLLECTION_LINK) is not this checkout (an installed copy?): replaced by a link to the checkout"; \
	    rm -rf $(COLLECTION_LINK); fi; \
	  mkdir -p $(dir $(COLLECTION_LINK)) && ln -sfn ../../.. $(COLLECTION_LINK); fi

demo: demo-setup
	$(BIN)/ansible-playbook -i inventory/demo/hosts.yml inventory/demo/prepare.yml
	@echo "== check-mode audit of the demo inventory (four nodes, three broken on purpose)"
	@$(BIN)/ansible-playbook -i inventory/demo/hosts.yml playbooks/audit.yml --check; rc=$$?; \
	  echo "== audit exit code $$rc (2: some node has findings; reports in .demo/reports/)"
	@echo "== remediation of the demo nodes: gpu-healthy is left alone (changed=0, nothing written),"
	@echo "   gpu-orphan-dropin is repaired, gpu-v3-oldname is refused (its config names the CRI plugin both"
	@echo "   ways; the role does not guess), which stops the rollout, so gpu-legacy is NOT PROCESSED"
	@echo "   (-e gpurt_max_fail_percentage=100 goes on: gpu-legacy's typo'd RuntimeClass is the class owner's to fix)"
	@$(BIN)/ansible-playbook -i inventory/demo/hosts.yml playbooks/remediate.yml; rc=$$?; \
	  $(BIN)/python tools/demo_outcome.py .demo/reports/remediate.json $$rc

# promtool for tests/integration/test_monitoring.py, from the Go module proxy, cached by version.
.PHONY: promtool
setup: promtool
promtool:
	GPURT_CACHE=$(GPURT_CACHE) tools/build-promtool .cache/bin

unit: setup
	$(BIN)/pytest -q tests/unit

integration: setup
	$(BIN)/pytest -q -n auto --dist loadfile tests/integration

# ansible-test sanity, then ansible-lint
sanity: setup
	GPURT_CACHE=$(GPURT_CACHE) BIN=$(CURDIR)/$(BIN) tests/sanity/run

lint: setup
	$(BIN)/ansible-lint --offline -q playbooks roles inventory/demo/prepare.yml

# --durations: the slowest tests named in every CI log, where the next cut of the warm run's time starts.
# sanity and test-oldest side by side: each keeps about one core busy (ansible-test runs one test at a time;
# test-oldest's workers mostly wait on ansible-playbook), and each one's output comes out whole when it ends.
test: setup
	$(BIN)/pytest -q -n auto --dist loadfile --durations=40 tests
	$(MAKE) --no-print-directory -j2 --output-sync=target sanity test-oldest

$(OLDEST_VENV)/.installed: requirements-oldest.txt
	@test -n "$(OLDEST_PYTHON)" || { echo "no Python for ansible-core $(OLDEST_CORE)" >&2; exit 1; }
	rm -rf $(OLDEST_VENV)
	$(OLDEST_PYTHON) -m venv $(OLDEST_VENV)
	$(OLDEST_VENV)/bin/pip install -q -r requirements-oldest.txt
	touch $@

$(UNSUPPORTED_VENV)/.installed:
	rm -rf $(UNSUPPORTED_VENV)
	$(UNSUPPORTED_PYTHON) -m venv $(UNSUPPORTED_VENV)
	$(UNSUPPORTED_VENV)/bin/pip install -q 'ansible-core>=2.15,<2.16'
	touch $@

# The playbook tests again, driven by the oldest controller claimed (GPURT_ANSIBLE_BIN), on two workers
# (measured on 2 cores under load: 430 s against 587 s for one).
test-oldest: setup $(OLDEST_VENV)/.installed $(if $(UNSUPPORTED_PYTHON),$(UNSUPPORTED_VENV)/.installed)
	@echo "== ansible-core $(OLDEST_CORE) on $$($(OLDEST_VENV)/bin/python --version)"
	GPURT_ANSIBLE_BIN=$(OLDEST_VENV)/bin \
	GPURT_EXPECT_CONTROLLER="$(OLDEST_CORE) $$($(OLDEST_VENV)/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])')" \
	GPURT_UNSUPPORTED_ANSIBLE_BIN=$(if $(UNSUPPORTED_PYTHON),$(UNSUPPORTED_VENV)/bin) \
	  $(BIN)/pytest -q -n 2 --dist loadfile -p no:cacheprovider $(OLDEST_TESTS)

# The check-mode audit against a bare playbook at N nodes: time ratio, API lists, peak controller memory
# (benchmarks/README.md). By default the sizes of issue 11's goals, median of 5: on 2 cores one repeat's
# ratio at N = 200 moves by 0.2 from repeat to repeat, more than the audit's own extra cost (~8 min).
# BENCH_ARGS="--sizes 10,200,1000 --repeat 3" adds N = 1000 (about 10 minutes more per repeat).
BENCH_ARGS ?= --sizes 10,200 --repeat 5
bench: setup
	$(BIN)/python benchmarks/audit_scale.py $(BENCH_ARGS)

build: setup
	$(BIN)/ansible-galaxy collection build --force --output-path .cache/dist

clean:
	rm -rf .collections .demo .cache/dist tests/output .pytest_cache

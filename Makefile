# hostcore: `make serve` starts the wiki on its embedded default; `make test` runs every test.
# `make serve` installs what serving needs into .venv (hostcore and every plugin, quietly). `make install`
# adds the test tools (each package's test extra: pytest, ruff, mypy, selenium, moto ...); `make test`
# runs it, then installs .tools (Node 22 + the MCP conformance suite, pinned in
# tests/conformance/package-lock.json) and the servers the tests start (Debian's redis-server, chromium
# and chromium-driver: installed when run as root, else named).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PLUGINS := $(sort $(dir $(wildcard plugins/*/setup.cfg)))
# each plugin editable; for the tests, with its test extra when its setup.cfg declares one
PLUGIN_INSTALLS := $(foreach p,$(PLUGINS),-e '$(p)')
PLUGIN_TEST_INSTALLS := $(foreach p,$(PLUGINS),-e '$(p)$(if $(shell grep -s '^test *=' $(p)setup.cfg),[test])')
# pip's errors only: setuptools' notes on editable builds (one or two per package) are not the operator's concern
PIP_INSTALL := $(BIN)/python -m pip install --quiet --quiet --disable-pip-version-check
INSTANCE ?= instance
BIND ?= 127.0.0.1:8080
WORKERS ?= 2
MERMAID_VERSION := 11.17.2
MERMAID := plugins/web/hostcore_web/static/vendor/mermaid.min.js
EASYMDE_VERSION := 2.21.0
EASYMDE := plugins/web/hostcore_web/static/vendor/easymde.min.js

.PHONY: install install-serve serve test check lint tools servers bench clean

# what serving needs
$(BIN)/.serving: setup.cfg $(wildcard plugins/*/setup.cfg)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "installing hostcore and its plugins into $(VENV)"
	@$(PIP_INSTALL) --upgrade pip
	@$(PIP_INSTALL) -e . $(PLUGIN_INSTALLS)
	@touch $@

# and what the tests and linters need: a developer's install
$(BIN)/.installed: $(BIN)/.serving
	@echo "installing the test tools into $(VENV)"
	@$(PIP_INSTALL) -e '.[test]' $(PLUGIN_TEST_INSTALLS)
	@touch $@

install-serve: $(BIN)/.serving $(MERMAID) $(EASYMDE)

install: install-serve $(BIN)/.installed

# mermaid for the web plugin's diagrams, served from the wiki itself (no CDN); without npm, diagrams stay code
$(MERMAID):
	@mkdir -p $(dir $@)
	cd $(dir $@) && { npm pack --silent mermaid@$(MERMAID_VERSION) >/dev/null && \
	  tar xzf mermaid-$(MERMAID_VERSION).tgz --strip-components=2 package/dist/mermaid.min.js && \
	  rm -f mermaid-$(MERMAID_VERSION).tgz; } || echo "mermaid not fetched (needs npm): diagrams show as code"

# EasyMDE (the page editor: toolbar, side-by-side preview), served from the wiki itself; without npm the editor is a plain textarea
$(EASYMDE):
	@mkdir -p $(dir $@)
	cd $(dir $@) && { npm pack --silent easymde@$(EASYMDE_VERSION) >/dev/null && \
	  tar xzf easymde-$(EASYMDE_VERSION).tgz --strip-components=2 package/dist/easymde.min.js package/dist/easymde.min.css && \
	  rm -f easymde-$(EASYMDE_VERSION).tgz; } || echo "EasyMDE not fetched (needs npm): the editor is a plain textarea"

tools:
	tests/conformance/run.sh --install

serve: install-serve
	$(BIN)/hostcore --instance $(INSTANCE) init
	$(BIN)/hostcore --instance $(INSTANCE) serve --bind $(BIND) --workers $(WORKERS)

# Debian packages the tests start: redis-server, and Chromium with its driver for the browser tests
servers:
	@missing=""; \
	command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	command -v chromedriver >/dev/null || missing="$$missing chromium-driver"; \
	[ -z "$$missing" ] || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else \
	    echo "the tests need Debian's$$missing: sudo apt-get install$$missing"; exit 1; \
	  fi; }

test: install tools servers lint
	$(BIN)/python -m pytest

lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy

# the inner loop: lint, types and the in-process tests (`pytest --fast` leaves out the tests marked
# serve, browser, s3, redis and slow); `make test` runs them all
check: lint
	$(BIN)/python -m pytest --fast -q -n 2

bench: install
	for script in bench/*.py; do $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(VENV) .tools

# The README's two commands: `make demo` and `make test`. Both install what they need.
PYTHON ?= python3
VENV ?= .venv
DIR ?= demo-cluster
PY := $(VENV)/bin/python
STAMP := $(VENV)/.install-stamp
APT_GET := DEBIAN_FRONTEND=noninteractive apt-get -y -q -o DPkg::Lock::Timeout=600
# Real Ganeti 3.0 from Debian: its clients are used by the compatibility tests.
COMPAT_PACKAGES := ganeti-3.0 python3-ganeti-rapi

.PHONY: install install-compat demo test lint typecheck unit sdist clean

install: $(STAMP)
	@$(PY) -c "from twisted.plugin import IPlugin, getPlugins; list(getPlugins(IPlugin))"

$(STAMP): setup.py pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test]' \
		--config-settings editable_mode=compat
	@touch $(STAMP)

install-compat:
	@if ! dpkg -s $(COMPAT_PACKAGES) >/dev/null 2>&1; then \
		test -e /usr/sbin/policy-rc.d || { printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; }; \
		$(APT_GET) update -qq && $(APT_GET) install --no-install-recommends $(COMPAT_PACKAGES) >/dev/null; \
	fi

demo: install
	@$(VENV)/bin/ganeti-vcluster demo $(DIR)

lint: install
	$(VENV)/bin/ruff check ganeti twisted tests bench bin
typecheck: install
	$(VENV)/bin/mypy ganeti twisted/plugins

unit: install
	$(PY) -m pytest -q tests

test: install install-compat lint typecheck unit

sdist: install
	$(PY) setup.py -q sdist

clean:
	rm -rf build dist *.egg-info .mypy_cache .ruff_cache

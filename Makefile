# The README's two commands: `make demo` and `make test`. Both install what they need.
PYTHON ?= python3
VENV ?= .venv
DIR ?= demo-cluster
PY := $(VENV)/bin/python
STAMP := $(VENV)/.install-stamp
APT_GET := DEBIAN_FRONTEND=noninteractive apt-get -y -q -o DPkg::Lock::Timeout=600
# Real Ganeti 3.0 from Debian: its clients are used by the compatibility tests, and
# Debian's own OS definition (tests/integration/test_debootstrap.py installs a Debian
# instance with it, unchanged).
COMPAT_PACKAGES := ganeti-3.0 python3-ganeti-rapi ganeti-htools-3.0 \
	ganeti-instance-debootstrap debootstrap
# Debian's Chromium and its driver: the dashboard test (tests/integration/test_dashboard.py)
# drives them with selenium; nothing is downloaded by the test tools themselves.
BROWSER_PACKAGES := chromium chromium-driver
# What the project's OS definition (share/os/busybox) runs: a static busybox for the
# instance's root tree, mkfs.ext4 -d and debugfs to write and read its image.
OS_PACKAGES := busybox-static e2fsprogs
# Real Ganeti 3.0 daemons from Debian, the oracle of tests/integration/test_real_luxid.py:
# ganeti-haskell-3.0 is downloaded and unpacked here (never installed, never committed).
ORACLE_DIR := .cache/ganeti-haskell
ORACLE_PACKAGE := ganeti-haskell-3.0
ORACLE_LUXID := $(ORACLE_DIR)/root/usr/lib/ganeti/3.0/usr/sbin/ganeti-luxid
# The libraries its binaries link against (the package's Depends).
ORACLE_LIBS := libpcre3 libcurl3-gnutls libgmp10 libffi8 zlib1g
# luxid looks up Ganeti's system users at startup; ganeti-3.0 ships the script that adds them.
USERS_SETUP := /usr/lib/ganeti/3.0/usr/lib/ganeti/tools/users-setup
ORACLE_USERS := gnt-masterd gnt-confd gnt-metad gnt-rapi
ORACLE_GROUPS := gnt-admin gnt-confd gnt-daemons gnt-luxid gnt-masterd gnt-metad gnt-rapi
APT_DOWNLOAD := apt-get download -q -o APT::Sandbox::User=$$(id -un)
# The complete real Ganeti 3.0 cluster of the side-by-side oracle (tests/integration/oracle,
# realcluster/real_cluster_up.sh): Debian's daemons installed with no service started
# (policy-rc.d), `ganeti` for the /usr/sbin links, and the tools the script runs.
REAL_CLUSTER_PACKAGES := ganeti ganeti-3.0 ganeti-haskell-3.0 ganeti-htools-3.0 ganeti-testsuite \
	bc iproute2 util-linux
# Real VMs (issue 17; docs/design/hypervisor-kvm.md), installed with no service started
# (policy-rc.d): QEMU in TCG mode boots the guests (qemu-system-x86) and qemu-img makes
# their disks (qemu-utils); a libvirtd per node drives them (libvirt-daemon-system, which
# also adds the libvirt-qemu user its QEMU driver needs; virsh from libvirt-clients);
# libvirt-python builds against libvirt-dev with pkg-config and gcc; `make guest` puts
# busybox-static and kernel modules (kmod's modinfo orders them) into the guest's
# initramfs, which cpio lists back (its tests, debugging); the namespaced virtual cluster
# wires nodes with ip (iproute2); socat is the serial console's client, as in Ganeti.
VM_PACKAGES := qemu-system-x86 qemu-utils libvirt-daemon-system libvirt-clients libvirt-dev \
	pkg-config gcc busybox-static cpio kmod iproute2 socat
# Tools some tests run themselves: LVM on a loop device (tests/noded/test_bdev_lvm.py,
# test_kvm.py) and curl (tests/integration/test_vcluster_netns.py). ganeti-3.0 depends
# on both; they are listed so that no test can skip for their absence (CI fails on
# any skip: .ci/run sets GANETI_TEST_NO_SKIP).
TOOL_PACKAGES := lvm2 curl
# The guest kernel and initramfs (ganeti/cli/guestbuild.py; docs/instances.md, "Guest files").
GUEST_DIR := .cache/guest
# Everything `make test` installs with apt-get, in one run (see `packages`).
TEST_PACKAGES := $(sort $(VM_PACKAGES) $(COMPAT_PACKAGES) $(OS_PACKAGES) $(BROWSER_PACKAGES) \
	$(ORACLE_LIBS) $(REAL_CLUSTER_PACKAGES) $(TOOL_PACKAGES))

.PHONY: packages prepare venv-checks install install-compat install-os install-oracle install-browser install-vm guest demo test quick lint typecheck unit test-migration-faults regen sdist clean

install: $(STAMP) install-vm guest
	@$(PY) -c "from twisted.plugin import IPlugin, getPlugins; list(getPlugins(IPlugin))"

$(STAMP): setup.py pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test]' \
		--config-settings editable_mode=compat
	@touch $(STAMP)

# As root: every package of TEST_PACKAGES that is missing, with one `apt-get update`
# and one install (the install-* targets below then find them and do nothing).
packages:
	@if [ "$$(id -u)" = 0 ]; then \
		missing=$$(for p in $(TEST_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
		if [ -n "$$missing" ]; then \
			test -e /usr/sbin/policy-rc.d || { printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; }; \
			echo "packages: installing" $$missing; \
			$(APT_GET) update -qq && $(APT_GET) install --no-install-recommends $$missing >/dev/null; \
		fi; \
	fi

# The two slow, independent first steps of `make test` side by side: the Debian
# packages (mostly downloads and dpkg) and the venv with the static checks (pip, then
# ruff and mypy: CPU), which need nothing from apt.
prepare:
	@$(MAKE) --no-print-directory -j2 packages venv-checks

venv-checks: lint typecheck

install-compat:
	@if ! dpkg -s $(COMPAT_PACKAGES) >/dev/null 2>&1; then \
		test -e /usr/sbin/policy-rc.d || { printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; }; \
		$(APT_GET) update -qq && $(APT_GET) install --no-install-recommends $(COMPAT_PACKAGES) >/dev/null; \
	fi

install-os:
	@if ! dpkg -s $(OS_PACKAGES) >/dev/null 2>&1; then \
		if [ "$$(id -u)" != 0 ]; then \
			echo "install-os: not root and $(OS_PACKAGES) missing: instances are created without installing our busybox OS (run 'sudo make install-os')" >&2; \
		else \
			$(APT_GET) update -qq && $(APT_GET) install --no-install-recommends $(OS_PACKAGES) >/dev/null; \
		fi; \
	fi

# As root: the packages real VMs need. libvirt-python (setup.py's `virt` extra) goes
# into the venv wherever libvirt-dev is there to build it against; without it (not
# root, nothing installed) instances run on the fake hypervisor only.
install-vm: $(STAMP)
	@if ! dpkg -s $(VM_PACKAGES) >/dev/null 2>&1; then \
		if [ "$$(id -u)" != 0 ]; then \
			echo "install-vm: not root and some of $(VM_PACKAGES) missing: real VMs are unavailable, instances use the fake hypervisor (run 'sudo make install-vm')" >&2; \
		else \
			test -e /usr/sbin/policy-rc.d || { printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; }; \
			$(APT_GET) update -qq && $(APT_GET) install --no-install-recommends $(VM_PACKAGES) >/dev/null; \
		fi; \
	fi
	@if ! $(PY) -c "import libvirt" 2>/dev/null && pkg-config --exists libvirt 2>/dev/null; then \
		$(PY) -m pip install -q --disable-pip-version-check -e '.[test,virt]' \
			--config-settings editable_mode=compat; \
	fi

# As root: the guest kernel (vmlinux) and initramfs in $(GUEST_DIR), from the Debian
# kernel package linux-image-amd64 points at (apt-get download; nothing else is
# fetched). Rebuilt only when that package or the recipe changes.
guest: $(STAMP) install-vm
	@if [ "$$(id -u)" != 0 ]; then \
		echo "guest: not root: the guest kernel and initramfs are not built, real VMs cannot boot (run 'sudo make guest')" >&2; \
	else \
		$(PY) -m ganeti.cli.guestbuild --dir $(GUEST_DIR); \
	fi

install-browser:
	@if ! dpkg -s $(BROWSER_PACKAGES) >/dev/null 2>&1; then \
		$(APT_GET) update -qq && $(APT_GET) install --no-install-recommends $(BROWSER_PACKAGES) >/dev/null; \
	fi

install-oracle: install-compat
	@if [ ! -x $(ORACLE_LUXID) ]; then \
		rm -rf $(ORACLE_DIR) && mkdir -p $(ORACLE_DIR) && cd $(ORACLE_DIR) && \
		{ $(APT_DOWNLOAD) $(ORACLE_PACKAGE) >/dev/null 2>&1 || \
		  { $(APT_GET) update -qq && $(APT_DOWNLOAD) $(ORACLE_PACKAGE) >/dev/null; }; } && \
		dpkg -x $(ORACLE_PACKAGE)_*.deb root.tmp && mv root.tmp root && \
		rm -f $(ORACLE_PACKAGE)_*.deb; \
	fi
	@if ! dpkg -s $(ORACLE_LIBS) >/dev/null 2>&1; then \
		$(APT_GET) update -qq && $(APT_GET) install --no-install-recommends $(ORACLE_LIBS) >/dev/null; \
	fi
	@missing=$$(for u in $(ORACLE_USERS); do getent passwd $$u >/dev/null || echo $$u; done; \
		for g in $(ORACLE_GROUPS); do getent group $$g >/dev/null || echo $$g; done); \
	if [ -n "$$missing" ]; then \
		$(USERS_SETUP) --yes-do-it >/dev/null 2>&1; \
		for u in $(ORACLE_USERS); do getent passwd $$u >/dev/null || { echo "user $$u missing" >&2; exit 1; }; done; \
		for g in $(ORACLE_GROUPS); do getent group $$g >/dev/null || { echo "group $$g missing" >&2; exit 1; }; done; \
	fi
	@if [ "$$(id -u)" != 0 ]; then \
		echo "install-oracle: not root; the side-by-side oracle (real cluster) will be skipped" >&2; \
	elif ! dpkg -s $(REAL_CLUSTER_PACKAGES) >/dev/null 2>&1; then \
		test -e /usr/sbin/policy-rc.d || { printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; }; \
		$(APT_GET) update -qq && $(APT_GET) install --no-install-recommends $(REAL_CLUSTER_PACKAGES) >/dev/null; \
	fi
	@if [ "$$(id -u)" = 0 ]; then mkdir -p /usr/share/ganeti/os; fi

demo: install install-os install-vm guest
	@$(VENV)/bin/ganeti-vcluster demo $(DIR)

lint: $(STAMP)
	$(VENV)/bin/ruff check ganeti twisted tests bench bin
typecheck: $(STAMP)
	$(VENV)/bin/mypy ganeti twisted/plugins
	$(VENV)/bin/mypy --strict ganeti/core/opcodes/views*.py ganeti/core/opcodes/genviews.py

# The integration tests wait on daemons and child processes much of the time, so
# the suite runs as two pytest processes side by side: the integration tests on two
# workers (pytest-xdist, a file's tests together and in order: most of their time is
# spent waiting), and everything else, then the two longest integration tests (the
# luxid oracle, which drives a real Ganeti cluster in its own namespaces, and the
# debootstrap install). The second one's output is shown once both are done. Three
# workers were tried: no faster on two cores, and timed tests failed. Sharing the
# cores, a timed figure may take longer than on a quiet machine: GANETI_SLOWDOWN
# scales the real-guest healing bound (15 s alone) and ORACLE_WALL_BUDGET the
# oracle's own time budget (300 s alone).
# As root, each of the two processes gets a tmpfs mounted for the run as its TMPDIR
# (short names: UNIX socket paths below it stay under 108 bytes): their clusters
# write, rename and fsync many small files (job and config files, ssconf), which on
# the disk took a third of the unit tests' time and nearly half of the integration
# tests'; durability is not what they test (their crash tests kill processes, which a
# tmpfs survives as a disk does). The oracle and the debootstrap install run on the
# disk.
INTEGRATION_WORKERS ?= 2
UNITS := $(filter-out tests/integration/,$(sort $(dir $(wildcard tests/*/)))) \
	$(wildcard tests/test_*.py)
BESIDE := tests/integration/oracle tests/integration/test_debootstrap.py
# Outside the test run's time budget (each has its own target below).
SLOW := tests/integration/test_kvm_migration_faults.py
unit: install
	@log=$$(mktemp); utmp=""; itmp=""; \
	if [ "$$(id -u)" = 0 ]; then \
		utmp=$$(mktemp -d /tmp/gu.XXXXXX); itmp=$$(mktemp -d /tmp/gi.XXXXXX); \
		trap 'umount -q '$$utmp' '$$itmp'; rmdir '$$utmp' '$$itmp EXIT; \
		mount -t tmpfs -o size=8g,mode=1777 ganeti-unit-tmp $$utmp || utmp=""; \
		mount -t tmpfs -o size=12g,mode=1777 ganeti-integration-tmp $$itmp || itmp=""; \
	fi; \
	echo "$(PY) -m pytest -q $(UNITS)$${utmp:+ (TMPDIR=$$utmp, a tmpfs)}; then $(PY) -m pytest -q $(BESIDE)  (in the background)"; \
	( TMPDIR=$${utmp:-$${TMPDIR:-/tmp}} $(PY) -m pytest -q -p no:cacheprovider --durations=15 \
		$(UNITS); units=$$?; \
	  ORACLE_WALL_BUDGET=720 $(PY) -m pytest -q -p no:cacheprovider --durations=10 \
		$(BESIDE); beside=$$?; \
	  test $$units = 0 && test $$beside = 0 ) >$$log 2>&1 & \
	pid=$$!; \
	echo "$(PY) -m pytest -q tests/integration (but those)$${itmp:+ (TMPDIR=$$itmp, a tmpfs)}"; \
	TMPDIR=$${itmp:-$${TMPDIR:-/tmp}} GANETI_SLOWDOWN=2 $(PY) -m pytest -q -n $(INTEGRATION_WORKERS) \
		--dist loadfile --durations=25 tests/integration --ignore=tests/integration/oracle \
		--ignore=tests/integration/test_debootstrap.py $(SLOW:%=--ignore=%); integration=$$?; \
	wait $$pid; others=$$?; \
	echo "--- $(UNITS) $(BESIDE):"; cat $$log; rm -f $$log; \
	echo "integration tests: exit $$integration; the others: exit $$others"; \
	test $$integration = 0 && test $$others = 0

test: prepare install install-compat install-os install-vm guest install-oracle install-browser unit

# The migration fault matrix with real kvm guests (root; about 2.5 minutes, ten real
# migrations: outside `make test`'s budget; the fake hypervisor's matrix is inside).
test-migration-faults: install install-vm guest
	@itmp=$$(mktemp -d /tmp/gi.XXXXXX); trap 'umount -q '$$itmp'; rmdir '$$itmp EXIT; \
	mount -t tmpfs -o size=8g,mode=1777 ganeti-integration-tmp $$itmp || itmp=""; \
	TMPDIR=$${itmp:-$${TMPDIR:-/tmp}} GANETI_TEST_NO_SKIP=1 $(PY) -m pytest -q -s \
		-p no:cacheprovider tests/integration/test_kvm_migration_faults.py

# The inner loop: every test but the integration tests and the tests that start a
# process or a daemon (pytest markers `integration` and `subprocess`, declared in
# pyproject.toml); GANETI_TEST_QUICK=1 fails a test that starts a process without
# the marker (tests/plugin.py). Needs only the venv; no package, no root.
quick: $(STAMP)
	GANETI_TEST_QUICK=1 $(PY) -m pytest -q -p no:cacheprovider --durations=5 \
		-m "not integration and not subprocess" tests

# Rewrite what is generated from declarations: the typed opcode views, the opcode
# reference in docs/design/opcodes-and-jobs.md and docs/rapi-openapi.json.
regen: install
	$(VENV)/bin/python -m ganeti.core.opcodes.genviews --docs docs/design/opcodes-and-jobs.md
	$(VENV)/bin/python -m ganeti.rapi.routes > docs/rapi-openapi.json

sdist: install
	$(PY) setup.py -q sdist

clean:
	rm -rf build dist *.egg-info .mypy_cache .ruff_cache

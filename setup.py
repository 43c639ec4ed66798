"""Packaging for ganeti-twisted: a Ganeti-compatible cluster manager on Twisted."""

import os

from setuptools import find_packages, setup

HERE = os.path.dirname(os.path.abspath(__file__))


def _version() -> str:
    scope: dict = {}
    with open(os.path.join(HERE, "ganeti", "version.py"), encoding="utf-8") as f:
        exec(f.read(), scope)
    return scope["PACKAGE_VERSION"]


BIN_SCRIPTS = [
    "bin/gnt-cluster",
    "bin/gnt-job",
    "bin/gnt-debug",
    "bin/gnt-node",
    "bin/gnt-group",
    "bin/gnt-filter",
    "bin/gnt-os",
    "bin/gnt-network",
    "bin/gnt-instance",
    "bin/gnt-backup",
    "bin/gnt-storage",
    "bin/ganeti-vcluster",
    "bin/ganeti-confd-query",
    "bin/ganeti-watcher",
    "bin/ganeti-place",
    # the daemons under Ganeti's program names (twistd plugins; luxid and wconfd: masterd)
    "bin/ganeti-masterd",
    "bin/ganeti-noded",
    "bin/ganeti-rapi",
    "bin/ganeti-confd",
    "bin/ganeti-luxid",
    "bin/ganeti-wconfd",
]

setup(
    name="ganeti-twisted",
    version=_version(),
    description="Ganeti-compatible cluster virtualization manager on Twisted",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="BSD-2-Clause",
    python_requires=">=3.11",
    packages=find_packages(include=["ganeti", "ganeti.*"]) + ["twisted.plugins"],
    package_data={"twisted": ["plugins/ganeti_*.py"],
                  "ganeti.rapi": ["static/*.html", "static/*.js", "static/*.css"]},
    scripts=BIN_SCRIPTS,
    install_requires=[
        "Twisted[tls]>=23.10",
        "pyOpenSSL>=23.0",
        "service_identity>=23.1",
        "txaio>=23.1",
        "autobahn>=23.1",
        "pyasn1>=0.5",
        "pyasn1-modules>=0.3",
        "cryptography>=41",
        "numpy>=1.24",
    ],
    extras_require={
        "test": ["pytest>=7", "hypothesis>=6", "ruff>=0.4", "mypy>=1.8", "mypy-zope>=1.0",
                 "openapi-spec-validator>=0.7", "selenium>=4.10", "pytest-xdist>=3.5",
                 "pyyaml>=6"],
        # real VMs through libvirt (`make install-vm`); builds against libvirt-dev
        "virt": ["libvirt-python>=9.0"],
    },
    data_files=[
        # every man page in docs/man (section 8)
        ("share/man/man8", sorted(f"docs/man/{name}" for name in os.listdir(
            os.path.join(HERE, "docs", "man")) if name.endswith(".8"))),
        # configuration examples, to copy to /etc: logrotate, systemd units, RAPI users
        ("share/ganeti-twisted/etc/logrotate.d", ["etc/logrotate.d/ganeti"]),
        ("share/ganeti-twisted/etc/cron.d", ["etc/cron.d/ganeti"]),
        ("share/ganeti-twisted/etc/systemd", ["etc/ganeti-masterd.service",
                                              "etc/ganeti-rapi.service"]),
        ("share/ganeti-twisted/etc", ["etc/rapi-users.example"]),
        # the project's own OS definition, found on the OS search path once linked there
        ("share/ganeti/os/busybox", sorted(f"share/os/busybox/{name}" for name in os.listdir(
            os.path.join(HERE, "share", "os", "busybox")))),
    ],
    zip_safe=False,
)

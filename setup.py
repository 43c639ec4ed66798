"""Packaging for ganeti-twisted: a Ganeti-compatible cluster manager on Twisted."""

import os

from setuptools import find_packages, setup


def _version() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    scope: dict = {}
    with open(os.path.join(here, "ganeti", "version.py"), encoding="utf-8") as f:
        exec(f.read(), scope)
    return scope["PACKAGE_VERSION"]


BIN_SCRIPTS = [
    "bin/gnt-cluster",
    "bin/gnt-job",
    "bin/gnt-debug",
    "bin/ganeti-vcluster",
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
    package_data={"twisted": ["plugins/ganeti_*.py"]},
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
    ],
    extras_require={
        "test": ["pytest>=7", "hypothesis>=6", "ruff>=0.4", "mypy>=1.8", "mypy-zope>=1.0"],
    },
    data_files=[
        ("share/man/man8", ["docs/man/ganeti-masterd.8", "docs/man/ganeti-vcluster.8",
                            "docs/man/gnt-cluster.8", "docs/man/gnt-job.8",
                            "docs/man/gnt-debug.8"]),
    ],
    zip_safe=False,
)

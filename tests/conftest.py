"""Test-session setup: trial's mktemp() writes relative to the cwd, so run in a scratch dir.

The suite's own hooks (the no-skip switch, the ``integration`` marker, the quick loop's
process guard) live in :mod:`tests.plugin`; importing them here registers them.
"""

import os
import shutil
import tempfile

import pytest

from tests.plugin import (  # noqa: F401  (pytest finds hooks by name)
    _no_unmarked_processes,
    pytest_collection_finish,
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_make_collect_report,
    pytest_runtest_makereport,
    pytest_unconfigure,
)


@pytest.fixture(autouse=True, scope="session")
def _scratch_cwd():
    old = os.getcwd()
    scratch = tempfile.mkdtemp(prefix="ganeti-tests-")
    os.chdir(scratch)
    try:
        yield
    finally:
        os.chdir(old)
        shutil.rmtree(scratch, ignore_errors=True)

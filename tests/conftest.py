"""Test-session setup: trial's mktemp() writes relative to the cwd, so run in a scratch dir."""

import os
import shutil
import tempfile

import pytest


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

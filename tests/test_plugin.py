"""The suite's own switches (tests/plugin.py), each run on a small test file of its own
with pytester: GANETI_TEST_NO_SKIP turns every skip into a failure, GANETI_TEST_QUICK
fails a test that starts a process without the ``subprocess`` marker."""

import pytest

from tests.plugin import NO_SKIP, QUICK

pytest_plugins = ["pytester"]

#: One skip of each kind the suite has: unittest's and trial's (in a test, and in
#: setUpClass), pytest's, a class decorator; one test that passes, one xfail.
SKIPS = '''
import unittest

import pytest
from twisted.trial.unittest import SkipTest, SynchronousTestCase


class Trial(SynchronousTestCase):
    def test_skip_test(self):
        self.skipTest("no libvirt here")

    def test_passes(self):
        self.assertEqual(1, 1)


class TrialClass(SynchronousTestCase):
    @classmethod
    def setUpClass(cls):
        raise SkipTest("not root")

    def test_one(self):
        pass


@unittest.skipIf(True, "no Chromium")
class Decorated(unittest.TestCase):
    def test_one(self):
        pass


def test_pytest_skip():
    pytest.skip("Debian's ganeti-3.0 is missing")


@pytest.mark.xfail(reason="known", strict=True)
def test_xfail():
    assert False
'''

MODULE_SKIP = '''
import pytest

pytest.skip("no LVM", allow_module_level=True)


def test_never():
    pass
'''


def run(pytester, monkeypatch, source, switch=None, *args):
    monkeypatch.delenv(NO_SKIP, raising=False)
    monkeypatch.delenv(QUICK, raising=False)
    if switch:
        monkeypatch.setenv(switch, "1")
    pytester.makepyfile(test_sample=source)
    return pytester.runpytest("-p", "tests.plugin", "-p", "no:cacheprovider", "-rA",
                              "-W", "ignore::pytest.PytestAssertRewriteWarning", *args)


def test_without_the_switch_skips_are_skips(pytester, monkeypatch):
    result = run(pytester, monkeypatch, SKIPS)
    result.assert_outcomes(passed=1, skipped=4, xfailed=1)


def test_the_switch_turns_every_skip_into_a_failure_with_its_reason(pytester, monkeypatch):
    result = run(pytester, monkeypatch, SKIPS, NO_SKIP)
    # a skip in set-up (setUpClass, a skipped class) fails as an error of the set-up
    result.assert_outcomes(passed=1, failed=2, errors=2, xfailed=1)
    for reason in ("no libvirt here", "not root", "no Chromium",
                   "Debian's ganeti-3.0 is missing"):
        result.stdout.fnmatch_lines([f"*skipped while {NO_SKIP} is set*{reason}*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_zero_means_off(pytester, monkeypatch):
    monkeypatch.setenv(NO_SKIP, "0")
    pytester.makepyfile(test_sample=SKIPS)
    result = pytester.runpytest("-p", "tests.plugin", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, skipped=4, xfailed=1)


def test_a_module_level_skip_is_a_collection_error(pytester, monkeypatch):
    assert run(pytester, monkeypatch, MODULE_SKIP).ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result = run(pytester, monkeypatch, MODULE_SKIP, NO_SKIP)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*skipped while {NO_SKIP} is set*no LVM*"])


SPAWNS = '''
import subprocess

import pytest


def test_unmarked():
    subprocess.run(["true"], check=True)


@pytest.mark.subprocess
def test_marked():
    subprocess.run(["true"], check=True)


def test_no_process():
    assert True
'''


@pytest.mark.subprocess
def test_quick_fails_an_unmarked_test_that_starts_a_process(pytester, monkeypatch):
    result = run(pytester, monkeypatch, SPAWNS, QUICK)
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_unmarked*",
                                 "*started a process (subprocess._fork_exec) in the test*"])


@pytest.mark.subprocess
def test_without_quick_processes_are_not_watched(pytester, monkeypatch):
    run(pytester, monkeypatch, SPAWNS).assert_outcomes(passed=3)


def test_integration_tests_are_marked(pytester, monkeypatch):
    from tests import plugin
    monkeypatch.setattr(plugin, "INTEGRATION_DIR", str(pytester.path / "integration"))
    (pytester.path / "integration").mkdir()
    (pytester.path / "integration" / "test_it.py").write_text("def test_a():\n    pass\n")
    pytester.makepyfile(test_unit="def test_b():\n    pass\n")
    result = pytester.runpytest("-p", "tests.plugin", "-p", "no:cacheprovider", "-q",
                                "-m", "not integration")
    result.assert_outcomes(passed=1, deselected=1)

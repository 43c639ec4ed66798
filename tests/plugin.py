"""The test suite's own pytest hooks, loaded by ``tests/conftest.py``.

Two switches, both environment variables so that ``make`` and ``.ci/run`` set them:

``GANETI_TEST_NO_SKIP=1``
    Every skip becomes a failure, with the skip's reason in the message: a test
    that skips because root, Debian's Ganeti, libvirt, Chromium... is missing
    would otherwise let ``make test`` pass with its checks unrun.  CI sets it
    (``.ci/run``): there ``make test`` runs as root and installs every package.

``GANETI_TEST_QUICK=1``
    The inner loop (``make quick``, which also deselects ``-m "not integration and
    not subprocess"``): a test that starts a process without the ``subprocess``
    marker fails, so that the quick selection stays quick and honest.

Every test under ``tests/integration/`` gets the ``integration`` marker here; the
markers themselves are declared in ``pyproject.toml``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

NO_SKIP = "GANETI_TEST_NO_SKIP"
QUICK = "GANETI_TEST_QUICK"
INTEGRATION_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "integration")


def switched_on(name: str) -> bool:
    """Whether an environment switch is set (anything but empty or ``0``)."""
    return os.environ.get(name, "") not in ("", "0")


def _skip_reason(longrepr: Any) -> str:
    """The reason of a skip report (pytest keeps ``(file, line, reason)``)."""
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def _fail_skip(report: pytest.BaseReport) -> None:
    report.outcome = "failed"
    report.longrepr = (f"skipped while {NO_SKIP} is set (every environment skip is a "
                       f"failure): {_skip_reason(report.longrepr)}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.skipped and switched_on(NO_SKIP) and not hasattr(report, "wasxfail"):
        _fail_skip(report)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.skipped and switched_on(NO_SKIP):
        _fail_skip(report)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if str(item.path).startswith(INTEGRATION_DIR + os.sep):
            item.add_marker(pytest.mark.integration)


# -- the quick loop: no process starts unmarked ------------------------------------------

#: Every way a Python process starts another: subprocess (its own reference to
#: ``_posixsubprocess.fork_exec``, taken at import), Twisted's spawnProcess and
#: multiprocessing (``os.fork``, ``os.posix_spawn[p]``).
_SPAWNERS: tuple[tuple[str, str], ...] = (
    ("subprocess", "_fork_exec"),
    ("_posixsubprocess", "fork_exec"),
    ("os", "fork"),
    ("os", "posix_spawn"),
    ("os", "posix_spawnp"),
)
_started: list[str] = []
_originals: list[tuple[Any, str, Any]] = []


def _recording(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
    def spawn(*args: Any, **kwargs: Any) -> Any:
        _started.append(name)
        return real(*args, **kwargs)
    return spawn


def pytest_configure(config: pytest.Config) -> None:
    if not switched_on(QUICK):
        return
    import importlib
    for module_name, attr in _SPAWNERS:
        module = importlib.import_module(module_name)
        real = getattr(module, attr, None)
        if real is not None:
            _originals.append((module, attr, real))
            setattr(module, attr, _recording(f"{module_name}.{attr}", real))


def pytest_unconfigure(config: pytest.Config) -> None:
    while _originals:
        module, attr, real = _originals.pop()
        setattr(module, attr, real)


def pytest_collection_finish(session: pytest.Session) -> None:
    # importing test modules may probe the machine (``unshare --net true``...): that
    # is collection, not a test
    _started.clear()


def _check_started(when: str) -> None:
    started, _started[:] = list(_started), []
    if started:
        pytest.fail(f"started a process ({', '.join(sorted(set(started)))}) {when} while "
                    f"{QUICK} is set: mark the test @pytest.mark.subprocess (or "
                    "pytestmark in its module)", pytrace=False)


@pytest.fixture(autouse=True)
def _no_unmarked_processes(request: pytest.FixtureRequest) -> Iterator[None]:
    if not switched_on(QUICK) or request.node.get_closest_marker("subprocess"):
        yield
        _started.clear()
        return
    _check_started("in the class's or module's set-up")
    yield
    _check_started("in the test")

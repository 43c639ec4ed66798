"""Imports flow one way: core <- luxi <- daemons and cli; no daemon imports another.

``ganeti/core/placement/`` (the allocator's model) is pure: the standard library
and ``ganeti.core`` only; the master's ``ganeti/master/iallocator/`` builds on it.

``ganeti/daemon/`` (start-up plumbing every daemon shares) sits beside core:
it imports only ``ganeti.core`` and itself (and Twisted, txaio), and core,
luxi and rpc do not import it.
"""

import ast
import os
import sys

import pytest
from twisted.trial.unittest import SynchronousTestCase

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DAEMONS = {"master", "noded", "confd", "rapi", "feeds", "cli"}
ALLOWED = {
    "core": {"core"},
    "luxi": {"core", "luxi"},
    "rpc": {"core", "rpc"},
    "daemon": {"core", "daemon"},
}
#: Modules directly under ganeti/ that daemon packages may use, and what they may import.
SHARED_MODULES = {"daemon": {"core"}}
#: Outside packages ganeti/daemon/ may import (besides the standard library).
DAEMON_MODULE_THIRD_PARTY = {"twisted", "txaio", "zope"}
#: Client libraries that live beside their daemon but hold no daemon state:
#: any package may use them (the confd client is how tools and scripts ask confd).
LIBRARIES = {"ganeti.confd.client", "ganeti.confd.protocol"}
#: Pure packages in core: the standard library and ganeti.core only (no Twisted, no
#: daemon), so that an allocator program can use them without a reactor.
PURE_CORE_PACKAGES = ("placement",)


def ganeti_imports(path):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            if all(n in LIBRARIES for n in names[1:]) or node.module in LIBRARIES:
                names = [n for n in names if n in LIBRARIES]
        for name in names:
            parts = name.split(".")
            if parts[0] == "ganeti" and len(parts) > 1 and name not in LIBRARIES:
                yield parts[1]


def module_paths(module):
    """The files of the shared module ``ganeti/<module>.py`` or package ``ganeti/<module>/``."""
    single = os.path.join(ROOT, "ganeti", module + ".py")
    if os.path.exists(single):
        return [single]
    base = os.path.join(ROOT, "ganeti", module)
    return sorted(os.path.join(base, n) for n in os.listdir(base) if n.endswith(".py"))


def _top_level_imports(tree):
    """The top-level package names ``tree`` imports (absolute imports only)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module.split(".")[0]


class LayeringTest(SynchronousTestCase):
    def test_import_direction(self):
        problems = []
        pkg_root = os.path.join(ROOT, "ganeti")
        for package in sorted(os.listdir(pkg_root)):
            pkg_dir = os.path.join(pkg_root, package)
            if not os.path.isdir(pkg_dir) or package.startswith("__"):
                continue
            allowed = ALLOWED.get(package, {"core", "luxi", "rpc", package, "version",
                                            *SHARED_MODULES})
            for base, _, files in os.walk(pkg_dir):
                for name in files:
                    if not name.endswith(".py"):
                        continue
                    path = os.path.join(base, name)
                    for target in ganeti_imports(path):
                        if (target in DAEMONS | set(ALLOWED) | set(SHARED_MODULES)
                                and target not in allowed):
                            rel = os.path.relpath(path, ROOT)
                            problems.append(f"{rel} imports ganeti.{target}")
        self.assertEqual(problems, [])

    def test_shared_modules_import_only_core(self):
        for module, allowed in SHARED_MODULES.items():
            for path in module_paths(module):
                self.assertEqual(set(ganeti_imports(path)) - allowed - {module}, set(), path)

    def test_daemon_module_third_party_imports(self):
        tops = set()
        for path in module_paths("daemon"):
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), path)
            tops.update(_top_level_imports(tree))
        outside = tops - set(sys.stdlib_module_names) - {"__future__", "ganeti"}
        self.assertLessEqual(outside, DAEMON_MODULE_THIRD_PARTY)

    def test_client_libraries_import_only_core(self):
        for module in sorted(LIBRARIES):
            path = os.path.join(ROOT, *module.split(".")) + ".py"
            targets = {t for t in ganeti_imports(path)} - {"core", "version"}
            self.assertEqual(targets, set(), module)

    def test_placement_is_pure(self):
        """core/placement: the standard library, ganeti.core and numpy (pure arithmetic,
        no I/O: the allocator's vectorised scoring, issue 29), nothing else."""
        for package in PURE_CORE_PACKAGES:
            base = os.path.join(ROOT, "ganeti", "core", package)
            paths = sorted(os.path.join(base, n) for n in os.listdir(base) if n.endswith(".py"))
            self.assertGreater(len(paths), 1, package)
            for path in paths:
                with open(path, encoding="utf-8") as f:
                    tree = ast.parse(f.read(), path)
                outside = set(_top_level_imports(tree)) - set(sys.stdlib_module_names) - {
                    "__future__", "ganeti", "numpy"}
                self.assertEqual(outside, set(), path)
                self.assertEqual(set(ganeti_imports(path)) - {"core"}, set(), path)

    def test_no_init_in_twisted_plugins(self):
        self.assertFalse(os.path.exists(os.path.join(ROOT, "twisted", "__init__.py")))
        self.assertFalse(os.path.exists(os.path.join(ROOT, "twisted", "plugins", "__init__.py")))


# Every module imports, each once, in one fresh process.  Whether a module also imports
# when it is the first one loaded (the order in which an import circle shows) follows
# from tests/test_import_cycles.py: its graph holds every import that can run, and has
# no circle.  (Importing each module first, in turn, took 90 s of the suite.)
IMPORT_EVERY = """
import importlib, pkgutil
import ganeti
names = sorted(m.name for m in pkgutil.walk_packages(ganeti.__path__, "ganeti."))
failures = []
for name in names:
    try:
        importlib.import_module(name)
    except Exception as err:
        failures.append(f"{name}: {type(err).__name__}: {err}")
print(len(names))
print("\\n".join(failures))
"""


@pytest.mark.subprocess
class ImportEveryModuleTest(SynchronousTestCase):
    def test_every_module_imports(self):
        import subprocess
        import sys
        proc = subprocess.run([sys.executable, "-c", IMPORT_EVERY], cwd=ROOT,
                              capture_output=True, text=True, check=True)
        count, *failures = proc.stdout.strip().split("\n")
        self.assertGreater(int(count), 40)
        self.assertEqual([f for f in failures if f], [])

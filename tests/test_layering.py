"""Imports flow one way: core <- luxi <- daemons and cli; no daemon imports another."""

import ast
import os

from twisted.trial.unittest import SynchronousTestCase

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DAEMONS = {"master", "noded", "confd", "rapi", "feeds", "cli"}
ALLOWED = {
    "core": {"core"},
    "luxi": {"core", "luxi"},
    "rpc": {"core", "rpc"},
}


def ganeti_imports(path):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "ganeti" and len(parts) > 1:
                yield parts[1]


class LayeringTest(SynchronousTestCase):
    def test_import_direction(self):
        problems = []
        pkg_root = os.path.join(ROOT, "ganeti")
        for package in sorted(os.listdir(pkg_root)):
            pkg_dir = os.path.join(pkg_root, package)
            if not os.path.isdir(pkg_dir) or package.startswith("__"):
                continue
            allowed = ALLOWED.get(package, {"core", "luxi", "rpc", package, "version"})
            for base, _, files in os.walk(pkg_dir):
                for name in files:
                    if not name.endswith(".py"):
                        continue
                    path = os.path.join(base, name)
                    for target in ganeti_imports(path):
                        if target in DAEMONS | set(ALLOWED) and target not in allowed:
                            rel = os.path.relpath(path, ROOT)
                            problems.append(f"{rel} imports ganeti.{target}")
        self.assertEqual(problems, [])

    def test_no_init_in_twisted_plugins(self):
        self.assertFalse(os.path.exists(os.path.join(ROOT, "twisted", "__init__.py")))
        self.assertFalse(os.path.exists(os.path.join(ROOT, "twisted", "plugins", "__init__.py")))

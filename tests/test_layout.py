"""The package layout rules of docs/design/architecture.md.

Every ``__init__.py`` under ``ganeti/`` holds a docstring, imports (names it
re-exports from its modules) and ``__all__``: no code of its own, so that a
reader finds each thing in the module named after it.  Every name in
``__all__`` exists.
"""

import ast
import importlib
import os

from twisted.trial.unittest import SynchronousTestCase

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def package_inits():
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, "ganeti")):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        if "__init__.py" in filenames:
            yield os.path.join(dirpath, "__init__.py")


def statement_problem(node):
    """Why ``node`` may not stand in an ``__init__.py``, or None."""
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
            and isinstance(node.value.value, str):
        return None  # the docstring
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return None
    if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] \
            == ["__all__"]:
        return None
    return f"line {node.lineno}: {type(node).__name__}"


class PackageInitTest(SynchronousTestCase):

    def test_every_init_holds_a_docstring_imports_and_all(self):
        problems = []
        for path in package_inits():
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read(), path)
            rel = os.path.relpath(path, ROOT)
            if ast.get_docstring(tree) is None:
                problems.append(f"{rel}: no docstring")
            if not any(isinstance(n, ast.Assign) and statement_problem(n) is None
                       for n in tree.body):
                problems.append(f"{rel}: no __all__")
            problems += [f"{rel}: {p}" for p in map(statement_problem, tree.body) if p]
        self.assertEqual(problems, [])

    def test_every_name_in_all_exists(self):
        missing = []
        for path in package_inits():
            rel = os.path.relpath(os.path.dirname(path), ROOT)
            name = rel.replace(os.sep, ".")
            module = importlib.import_module(name)
            for item in getattr(module, "__all__", []):
                if not hasattr(module, item):
                    try:
                        importlib.import_module(f"{name}.{item}")
                    except ImportError:
                        missing.append(f"{name}.{item}")
        self.assertEqual(missing, [])

    def test_the_rule_is_checked(self):
        tree = ast.parse('"""Doc."""\nimport os\n__all__ = []\nX = 1\ndef f(): pass\n')
        self.assertEqual([statement_problem(n) for n in tree.body],
                         [None, None, None, "line 4: Assign", "line 5: FunctionDef"])

"""No import circles between the modules of ``ganeti``.

Every import counts, including those inside functions (a function-level import
is how a circle hides until the day the order of imports changes); imports
under ``if TYPE_CHECKING:`` do not run and do not count.  A package's
``__init__`` is a module like any other: importing ``a.b.c`` adds an edge to
``a.b.c`` only, not to the packages on the way.
"""

import ast
import os

from twisted.trial.unittest import SynchronousTestCase

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def module_files():
    """Map of module name -> file for every module under ganeti/."""
    found = {}
    for base, _, files in os.walk(os.path.join(ROOT, "ganeti")):
        for name in files:
            if not name.endswith(".py"):
                continue
            rel = os.path.relpath(os.path.join(base, name), ROOT)[:-3].split(os.sep)
            if rel[-1] == "__init__":
                rel = rel[:-1]
            found[".".join(rel)] = os.path.join(base, name)
    return found


def _skip_type_checking(tree):
    """The nodes of ``tree`` outside ``if TYPE_CHECKING:`` blocks."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If):
            test = node.test
            name = getattr(test, "id", None) or getattr(test, "attr", None)
            if name == "TYPE_CHECKING":
                stack.extend(node.orelse)
                continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def imports_of(module, path, modules):
    """The ganeti modules that ``module`` imports (resolved to known modules)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    is_package = path.endswith("__init__.py")
    targets = set()
    for node in _skip_type_checking(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")
                keep = len(parts) - node.level + (1 if is_package else 0)
                base = ".".join(parts[:keep] + ([base] if base else []))
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                     for a in node.names]
        for name in names:
            if name in modules and name != module:
                targets.add(name)
    return targets


def cycles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, on_stack, stack, result = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return result


class ImportCycleTest(SynchronousTestCase):
    def test_finds_a_planted_cycle(self):
        self.assertEqual(cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}),
                         [["a", "b", "c"]])

    def test_no_import_cycles(self):
        modules = module_files()
        graph = {m: imports_of(m, p, modules) for m, p in modules.items()}
        found = cycles(graph)
        self.assertEqual(found, [], "import circles: " + "; ".join(
            " <-> ".join(c) for c in found))

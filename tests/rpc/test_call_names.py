"""Every node RPC call the master and the tools name exists in the call table.

Call names are strings, checked by the client only when the call is made;
this test reads the source instead (an AST walk over ``ganeti/master`` and
``ganeti/cli``), so a misspelt name in a path no test runs fails here.

A node RPC call is ``<x>.call_one(node, <name>, ...)`` or ``<x>.call(nodes,
<name>, ...)`` whose first argument is not a string (a LUXI call is
``call("Method", ...)``) and whose name is static or whose first argument is a
list (a LUXI ``call(method, *args)`` of a tool has neither).  A static name is
a string literal, a module-level string constant, or a conditional expression
of those; other names are listed, and only the modules in
:data:`DYNAMIC_SITES` may have them.
"""

from __future__ import annotations

import ast
import os

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import rpcdefs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCANNED = ("ganeti/master", "ganeti/cli")
#: Fewer sites than this means the walk has stopped finding them (a renamed method, say).
MIN_SITES = 60


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "text"`` assignments."""
    out = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = node.value.value
    return out


def _names(expr: ast.expr, constants: dict[str, str]) -> list[str] | None:
    """The call names ``expr`` can take, or None if it is not statically known."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return [expr.value]
    if isinstance(expr, ast.Name) and expr.id in constants:
        return [constants[expr.id]]
    if isinstance(expr, ast.IfExp):
        body, orelse = _names(expr.body, constants), _names(expr.orelse, constants)
        if body is not None and orelse is not None:
            return body + orelse
    return None


def _is_text(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and isinstance(expr.value, str)


def rpc_call_sites(source: str, filename: str) -> tuple[list[tuple[int, str]], list[int]]:
    """``([(line, call name), ...], [line of a site whose name is not static, ...])``."""
    tree = ast.parse(source, filename)
    constants = _constants(tree)
    found: list[tuple[int, str]] = []
    dynamic: list[int] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        method = node.func.attr
        if method not in ("call", "call_one") or len(node.args) < 2:
            continue
        first, name = node.args[0], node.args[1]
        names = _names(name, constants)
        if method == "call" and (_is_text(first) or (
                names is None and not isinstance(first, (ast.List, ast.ListComp)))):
            continue  # LUXI: call("Method", ...), a tool's call(method, *args)
        if names is None:
            dynamic.append(node.lineno)
        else:
            found.extend((node.lineno, n) for n in names)
    return sorted(found), sorted(dynamic)


def scan() -> tuple[dict[str, list[str]], list[str]]:
    """Call name -> where it is used, and the sites with a name known only at run time."""
    used: dict[str, list[str]] = {}
    dynamic: list[str] = []
    for top in SCANNED:
        for base, _, files in os.walk(os.path.join(ROOT, top)):
            for fname in sorted(files):
                if not fname.endswith(".py"):
                    continue
                path = os.path.join(base, fname)
                rel = os.path.relpath(path, ROOT)
                with open(path, encoding="utf-8") as f:
                    found, unknown = rpc_call_sites(f.read(), rel)
                for line, name in found:
                    used.setdefault(name, []).append(f"{rel}:{line}")
                dynamic.extend(f"{rel}:{line}" for line in unknown)
    return used, dynamic


#: Modules with helpers that take the call name from their callers; the literal
#: names the callers pass are not seen here and are run by the tests named.
DYNAMIC_SITES = {
    # _master_ip_call(node_(de)activate_master_ip): tests/master/test_lu_cluster.py
    "ganeti/master/lu/cluster.py",
    # call_master_ip (the same two calls): tests/master/test_lu_masterip.py
    "ganeti/master/lu/masterip.py",
    # run_os_call (instance_os_add, instance_run_rename): test_os_output_stream.py
    "ganeti/master/lu/osoutput.py",
    # the storage-unit listing (storage_list): tests/master/test_lu_storage.py
    "ganeti/master/lu/storage.py",
    # _on_disk_nodes (blockdev_find, blockdev_shutdown): test_instance_storage.py
    "ganeti/master/lu/instance_storage.py",
    # the tools' runner passes its caller's name on: tests/cli/test_noderpc.py
    "ganeti/cli/noderpc.py",
    # _call (the finalize and shutdown calls of a reconciliation, each named literally
    # at its call site): tests/master/test_lu_migration_faults.py
    "ganeti/master/lu/instance_migration_reconcile.py",
    # call_nodes (drbd_disconnect_net, drbd_attach_net, drbd_wait_sync, each named
    # literally at its call site): tests/master/test_lu_migration_drbd.py
    "ganeti/master/lu/instance_mirror.py",
}


class CallNamesTest(SynchronousTestCase):
    def test_every_name_is_declared(self) -> None:
        used, _ = scan()
        missing = {name: where for name, where in used.items() if name not in rpcdefs.CALLS}
        self.assertEqual(missing, {})

    def test_the_walk_finds_the_sites(self) -> None:
        used, _ = scan()
        sites = sum(len(where) for where in used.values())
        self.assertGreaterEqual(sites, MIN_SITES)
        # a few that must be seen, one-node and many-node, literal and constant
        self.assertIn("instance_start", used)  # call_one in instance_common
        self.assertIn("node_verify", used)  # call and call_one in verify_group
        self.assertIn("instance_events", used)  # a module constant (instwatch.CALL)
        self.assertIn("config_update", used)  # replication, in master/config

    def test_names_known_only_at_run_time_are_listed(self) -> None:
        _, dynamic = scan()
        files = {site.rsplit(":", 1)[0] for site in dynamic}
        self.assertEqual(files - DYNAMIC_SITES, set())

    def test_a_misspelt_name_is_found(self) -> None:
        source = (
            "CALL = 'instance_evnts'\n"
            "async def f(rpc, node, nodes, luxi):\n"
            "    await rpc.call_one(node, 'instance_strat', [])\n"
            "    await rpc().call([t(n) for n in nodes], CALL)\n"
            "    await rpc.call_one(node, 'a' if node else 'b')\n"
            "    luxi.call('QueryNodes', 'x')\n"
            "    luxi.call(method, *args)\n"
            "    await rpc.call_one(node, name)\n"
            "    await rpc.call([t(n) for n in nodes], name)\n")
        found, dynamic = rpc_call_sites(source, "<test>")
        self.assertEqual(found, [(3, "instance_strat"), (4, "instance_evnts"), (5, "a"),
                                 (5, "b")])
        self.assertEqual(dynamic, [8, 9])
        self.assertNotIn("instance_strat", rpcdefs.CALLS)

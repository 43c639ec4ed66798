"""How an integration test owns its virtual clusters: :class:`VirtualCluster` (one
cluster in a temporary directory, loopback or namespaced) and :class:`ClusterCase`,
the one base class every integration test that runs a cluster derives from.

A :class:`ClusterCase` subclass declares what it needs in class attributes and gets:

* ``cls.cluster``, created (and started, unless ``START`` is false) once for the
  class in ``setUpClass`` and destroyed in ``tearDownClass`` whatever happens;
  ``NODES``, ``PREFIX``, ``DOMAIN``, ``NAMESPACES`` (each node a network namespace
  with its own libvirtd: root only) say which;
* or, with ``SHARED = "key"``, one cluster for every class of the module with the same
  key (made by the first, destroyed when the module's tests are done: see
  ``tests/integration/conftest.py``);
* or none at all (``CLUSTER = False``): a test makes its own with :meth:`new_cluster`,
  destroyed after the test, as many as it likes;
* ``REQUIRES``: checks of the machine, each a callable giving the reason the class
  cannot run here or None; the first reason skips the class (and fails it under
  ``GANETI_TEST_NO_SKIP``, as CI runs);
* hooks: :meth:`prepareCluster` (before the start, for config edits),
  :meth:`startCluster` (the start itself: an environment, a mount namespace) and
  :meth:`setUpCluster` (after it; anything it starts is stopped by the subclass's
  ``tearDownClass``, which runs even when set-up fails half-way);
* helpers: :meth:`tool` (a command-line tool on the master), :meth:`require` (skip
  the rest of a test visibly), ``VirtualCluster.rapi_credentials``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from twisted.trial.unittest import SkipTest, SynchronousTestCase

from ganeti.luxi.client import LuxiClient
from tests.integration.helpers import VCLUSTER, free_ip_base, node_env, release_ip_base, run

#: Debian's Ganeti 3.0 (package ganeti-3.0): its gnt-* tools and Python tree.
DEBIAN = "/usr/share/ganeti/3.0"
#: Debian's Python and Ganeti's RAPI client (package python3-ganeti-rapi).
SYSTEM_PYTHON = "/usr/bin/python3"
RAPI_CLIENT = "/usr/lib/python3/dist-packages/ganeti/rapi/client.py"


def needs_files(*paths: str, package: str = "ganeti-3.0") -> Callable[[], str | None]:
    """A ``REQUIRES`` check: every path exists (installed by ``make test``)."""
    def check() -> str | None:
        missing = [p for p in paths if not os.path.exists(p)]
        if missing:
            return (f"Debian's {package} is not installed ({', '.join(missing)} missing; "
                    "make test installs it)")
        return None
    return check


def needs_debian_tool(*tools: str) -> Callable[[], str | None]:
    """A ``REQUIRES`` check: Debian's gnt-* tools (package ganeti-3.0)."""
    return needs_files(*(os.path.join(DEBIAN, t) for t in tools))


def needs_root() -> str | None:
    """A ``REQUIRES`` check: root (mounts, namespaces, loop devices)."""
    return None if os.geteuid() == 0 else "needs root"


#: A ``REQUIRES`` check: Debian's Python with Ganeti's RAPI client.
needs_rapi_client = needs_files(SYSTEM_PYTHON, RAPI_CLIENT, package="python3-ganeti-rapi")


class VirtualCluster:
    """A virtual cluster in a temporary directory: ``nodes`` nodes (node 1 the master,
    the others added by ``ganeti-vcluster create``), on a random free ``--ip-base``
    unless one is given, or (``namespaces``) each node in a network namespace of its
    own.  ``start`` runs every node's ganeti-noded and the master's ganeti-masterd."""

    def __init__(self, prefix: str = "ganeti-jobs-", nodes: int = 1,
                 ip_base: str | None = None, domain: str = "vcluster.test",
                 namespaces: bool = False, create_timeout: float = 300,
                 start_timeout: float = 60, lvm: bool = False) -> None:
        self.tmp = tempfile.mkdtemp(prefix=prefix)
        self.dir = os.path.join(self.tmp, "vc")
        self.nodes = [f"node{k}.{domain}" for k in range(1, nodes + 1)]
        self.domain = domain
        self.namespaces = namespaces
        #: whether its nodes get volume groups (loop devices: only the tests of plain
        #: and drbd disks need them, the others are faster without)
        self.lvm = lvm
        self.create_timeout = create_timeout
        self.start_timeout = start_timeout
        self.ip_base = "" if namespaces else (ip_base or free_ip_base(nodes))
        self.ips = [f"{self.ip_base}{k}" for k in range(1, nodes + 1)]
        self.master = self.nodes[0]
        self.env = node_env(self.dir, self.master)
        self.root = self.env["GANETI_ROOTDIR"]
        self.socket = os.path.join(self.root, "var/run/ganeti/socket/ganeti-query")
        self.queue_dir = os.path.join(self.root, "var/lib/ganeti/queue")
        self.pid_file = os.path.join(self.root, "var/run/ganeti/ganeti-masterd.pid")
        self.log_file = os.path.join(self.root, "var/log/ganeti/master-daemon.log")
        #: ``ganeti-vcluster create``'s and the last ``start``'s CompletedProcess
        self.created: Any = None
        self.started: Any = None
        #: what ``create`` wrote to vcluster.json
        self.state: dict[str, Any] = {}

    def node_root(self, node: str) -> str:
        """The root directory of a node (full name)."""
        return os.path.join(self.dir, node)

    def create_argv(self) -> list[str]:
        argv = [VCLUSTER, "create", self.dir, "--nodes", str(len(self.nodes))]
        if not self.lvm:
            argv.append("--no-lvm")
        if self.namespaces:
            return [*argv, "--namespaces"]
        return [*argv, "--ip-base", self.ip_base, "--domain", self.domain]

    def create(self, start: bool = True) -> VirtualCluster:
        """``ganeti-vcluster create``; with ``start`` its ``--start`` (the daemons stay
        up, as a later ``start`` would leave them)."""
        argv = self.create_argv() + (["--start"] if start else [])
        self.created = run(argv, timeout=self.create_timeout + (self.start_timeout
                                                                 if start else 0))
        with open(os.path.join(self.dir, "vcluster.json"), encoding="utf-8") as f:
            self.state = json.load(f)
        if start:
            self.started = self.created
        return self

    def start(self, prefix: Sequence[str] = (), env: dict[str, str] | None = None) -> Any:
        """``ganeti-vcluster start`` (under ``prefix``, e.g. a mount namespace every
        daemon inherits; with ``env`` added to the environment)."""
        self.started = run([*prefix, VCLUSTER, "start", self.dir], env=env,
                           timeout=self.start_timeout)
        return self.started

    def stop(self) -> Any:
        return run([VCLUSTER, "stop", self.dir], timeout=self.start_timeout)

    def destroy(self) -> None:
        if os.environ.get("GANETI_KEEP_CLUSTER"):
            print(f"\nGANETI_KEEP_CLUSTER: {self.dir} left running")
            return
        if os.path.exists(os.path.join(self.dir, "vcluster.json")):
            run([VCLUSTER, "destroy", self.dir], check=False, timeout=max(
                120, self.start_timeout))
        shutil.rmtree(self.tmp, ignore_errors=True)
        release_ip_base(self.ip_base)

    def client(self, timeout: float = 60.0) -> LuxiClient:
        return LuxiClient(self.socket, timeout=timeout)

    def pid(self) -> int:
        with open(self.pid_file, encoding="ascii") as f:
            return int(f.read().strip())

    def log_tail(self, lines: int = 40) -> str:
        try:
            with open(self.log_file, encoding="utf-8", errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no log)"

    def rapi_credentials(self) -> tuple[str, str]:
        """The RAPI user and password ``create`` made (``DIR/rapi-credentials``)."""
        with open(os.path.join(self.dir, "rapi-credentials"), encoding="utf-8") as f:
            user, password = f.read().split()
        return user, password


#: Clusters shared by classes (``SHARED``): (module, key) -> cluster; released by
#: :func:`release_shared` when the module's tests are done.
_shared: dict[tuple[str, str], VirtualCluster] = {}


def release_shared(module: str) -> None:
    """Destroy the shared clusters of a module."""
    for key in [k for k in _shared if k[0] == module]:
        _shared.pop(key).destroy()


class ClusterCase(SynchronousTestCase):
    """The base class of integration tests that run virtual clusters (see the module)."""

    PREFIX: ClassVar[str] = "ganeti-test-"
    NODES: ClassVar[int] = 1
    DOMAIN: ClassVar[str] = "vcluster.test"
    NAMESPACES: ClassVar[bool] = False
    #: whether ``ganeti-vcluster start`` runs after ``create``, and its time bound
    START: ClassVar[bool] = True
    START_TIMEOUT: ClassVar[float] = 60
    #: a class that neither prepares nor starts its cluster its own way gets it from
    #: ``create --start`` (the daemons stay up: no stop and start again); False: a
    #: plain ``create`` then ``start``, as an administrator may run them
    CREATE_RUNNING: ClassVar[bool] = True
    #: whether the cluster's nodes get volume groups (``plain``/``drbd`` tests)
    LVM: ClassVar[bool] = False
    #: whether the class has a cluster of its own (or shares one: ``SHARED``)
    CLUSTER: ClassVar[bool] = True
    SHARED: ClassVar[str | None] = None
    REQUIRES: ClassVar[Sequence[Callable[[], str | None]]] = ()

    cluster: ClassVar[VirtualCluster]
    env: ClassVar[dict[str, str]]

    @classmethod
    def unavailable(cls) -> str | None:
        """Why this class cannot run on this machine (a skip reason), or None."""
        for check in cls.REQUIRES:
            reason = check()
            if reason:
                return reason
        return None

    @classmethod
    def setUpClass(cls) -> None:
        reason = cls.unavailable()
        if reason:
            raise SkipTest(reason)
        if not cls.CLUSTER:
            return
        try:
            if cls.SHARED is None:
                cls.cluster = cls.make_cluster()
            else:
                key = (cls.__module__, cls.SHARED)
                if key not in _shared:
                    _shared[key] = cls.make_cluster()
                cls.cluster = _shared[key]
            cls.env = node_env(cls.cluster.dir, cls.cluster.master)
            cls.setUpCluster()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def make_cluster(cls, start: bool | None = None, **overrides: Any) -> VirtualCluster:
        """A new cluster as the class declares it (``overrides``: VirtualCluster's
        arguments), prepared and (``START`` unless ``start`` says) started; destroyed
        if that fails."""
        options: dict[str, Any] = {"prefix": cls.PREFIX, "nodes": cls.NODES,
                                   "domain": cls.DOMAIN, "namespaces": cls.NAMESPACES,
                                   "start_timeout": cls.START_TIMEOUT, "lvm": cls.LVM}
        options.update(overrides)
        cluster = VirtualCluster(**options)
        start = cls.START if start is None else start
        own = (getattr(cls.prepareCluster, "__func__", None)
               is not getattr(ClusterCase.prepareCluster, "__func__", None)
               or getattr(cls.startCluster, "__func__", None)
               is not getattr(ClusterCase.startCluster, "__func__", None))
        try:
            if start and cls.CREATE_RUNNING and not own:
                cluster.create(start=True)
                return cluster
            cluster.create(start=False)
            cls.prepareCluster(cluster)
            if start:
                cls.startCluster(cluster)
        except BaseException:
            cluster.destroy()
            raise
        return cluster

    @classmethod
    def prepareCluster(cls, cluster: VirtualCluster) -> None:
        """After ``create``, before ``start``: edit its config, add OS definitions..."""

    @classmethod
    def startCluster(cls, cluster: VirtualCluster) -> None:
        """Start its daemons (a subclass may add an environment or a prefix)."""
        cluster.start()

    @classmethod
    def setUpCluster(cls) -> None:
        """After the class's cluster runs: what else the class needs."""

    @classmethod
    def tearDownClass(cls) -> None:
        cluster = cls.__dict__.get("cluster")
        if cluster is not None and cls.SHARED is None:
            cluster.destroy()

    def new_cluster(self, start: bool | None = None, **overrides: Any) -> VirtualCluster:
        """A cluster of the test's own, destroyed after the test."""
        cluster = self.make_cluster(start, **overrides)
        self.addCleanup(cluster.destroy)
        return cluster

    def require(self, check: Callable[[], str | None]) -> None:
        """Skip the rest of the test if a ``REQUIRES``-style check gives a reason (a
        failure under ``GANETI_TEST_NO_SKIP``): a part of a test that needs a package
        is never left out silently."""
        reason = check()
        if reason:
            self.skipTest(reason)

    def tool(self, path: str, *argv: str, debian: bool = False) -> str:
        """Run a tool on the master (Debian's by path, ours with this interpreter); its
        standard output, the test failing with its output if it exits non-zero."""
        cmd = [path] if debian else [sys.executable, path]
        r = run([*cmd, *argv], env=self.env, check=False, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r.stdout

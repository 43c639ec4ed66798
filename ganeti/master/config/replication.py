"""Replication from the master to the nodes: config, ssconf, ancillary files and job files.

What goes where (docs/design/nodes-and-replication.md):

- ``config.data`` to every master candidate, after every config change;
- the ssconf files to every node, whenever their values change (and the
  master's own ssconf files are rewritten locally);
- ``rapi.pem``, the RAPI users file, ``cluster-domain-secret``, ``hmac.key``,
  the VNC password files named by the hypervisor parameters (the cluster's,
  the OSes' and the instances' ``vnc_password_file``) and the files named in
  ``CONF_DIR/redistribute-files`` to every node (as Ganeti's ancillary files),
  by ``gnt-cluster redist-conf`` and when a node joins;
- every job file write and every archive rename to the candidates.

Offline nodes are never contacted.  Each failure is logged and remembered
per node until that node next succeeds; cluster verify reports what is
remembered.  A config change fails (after being committed on the master)
only when more than half of the candidates did not get it.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from twisted.internet import defer
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from ganeti.core import fileutil, hvchecks, params_fill, rpcdefs, ssconf
from ganeti.core.objects import ConfigData, Node
from ganeti.core.paths import Paths
from ganeti.master.config import nodes as nodesmod
from ganeti.rpc.noderpc import NodeRpc, NodeTarget
from ganeti.rpc.result import RpcResult

#: Administrator-maintained list (one absolute path per line) of extra files for redist-conf.
EXTRA_FILES_NAME = "redistribute-files"
CONFIG_TIMEOUT = rpcdefs.TMO_FAST
JOB_TIMEOUT = rpcdefs.TMO_FAST


class ConfigUpdateLike(Protocol):
    """What replication needs of a commit (see ``configwriter.ConfigUpdate``)."""

    record: str | None

    async def text(self) -> str:
        """The whole config text."""
        ...  # pragma: no cover


BlockingRunner = Callable[..., "defer.Deferred[Any]"]


@dataclass(frozen=True)
class Failure:
    """A replication failure remembered for cluster verify."""

    what: str
    message: str
    when: float


def majority_failed(results: dict[str, RpcResult]) -> bool:
    """Whether more than half of the (contacted) nodes failed."""
    contacted = [r for r in results.values() if not r.offline]
    failed = [r for r in contacted if not r.success]
    return len(failed) * 2 > len(contacted)


class Replicator:
    """Pushes config, ssconf, ancillary and job files to the nodes that must have them."""

    log = Logger()

    def __init__(self, rpc: Callable[[], NodeRpc], config: Callable[[], ConfigData],
                 paths: Paths, clock: IReactorTime, run_blocking: BlockingRunner) -> None:
        """``config`` gives the committed config (who the candidates are for job files)."""
        self._rpc = rpc
        self._config = config
        self.paths = paths
        self.clock = clock
        self._run_blocking = run_blocking
        self._local_ssconf: dict[str, str] | None = None
        self._pushed_ssconf: dict[str, str] | None = None
        self._instance_list: tuple[dict[str, Any], str] | None = None
        self.failures: dict[str, dict[str, Failure]] = {}  # node name -> what -> failure
        self._jobs_busy = False
        self._jobs_pending: list[tuple[dict[int, str], list[int]]] = []
        self._jobs_idle: list[defer.Deferred[None]] = []

    # --- bookkeeping ---------------------------------------------------------------

    def _record(self, results: dict[str, RpcResult], what: str) -> list[RpcResult]:
        failed = []
        for name, result in results.items():
            per_node = self.failures.setdefault(name, {})
            if result.success:
                per_node.pop(what, None)
            elif not result.offline:
                per_node[what] = Failure(what, result.fail_msg or "failed", self.clock.seconds())
                failed.append(result)
                self.log.warn("Replication of {what} to {node} failed: {msg}", what=what,
                              node=name, msg=result.fail_msg)
            if not per_node:
                self.failures.pop(name, None)
        return failed

    def forget(self, node_name: str) -> None:
        """Drop what is remembered about a node (it left the cluster)."""
        self.failures.pop(node_name, None)

    def wire(self, path: str) -> str:
        """A local path as the nodes know it."""
        return rpcdefs.to_wire_path(self.paths.root, path)

    # --- config and ssconf -----------------------------------------------------------

    def _write_local_ssconf(self, values: dict[str, str]) -> None:
        old = self._local_ssconf or {}
        for key, value in sorted(values.items()):
            if old.get(key) != value:
                fileutil.atomic_write(self.paths.ssconf_file(key), ssconf.file_content(value),
                                      mode=ssconf.FILE_MODE, durable=False)

    def upload_args(self, path: str, content: bytes | str, mode: int,
                    mtime: float | None = None) -> list[Any]:
        """Arguments of upload_file for a local file's content."""
        return [self.wire(path), rpcdefs.encode_content(content, compress=True), mode,
                None, None, None, mtime]

    async def distribute_config(self, cfg: ConfigData, update: ConfigUpdateLike,
                                force_ssconf: bool = False) -> str | None:
        """After a commit: local ssconf, config to candidates, ssconf to all nodes.

        Candidates get the change record (``config_update``); those whose copy
        is not at the record's base serial answer false and get the whole
        file, as does every candidate when there is no record or on
        ``force_ssconf`` (redist-conf).  Returns None, or a message when more
        than half of the candidates failed.
        """
        values = self._ssconf(cfg)
        if values != self._local_ssconf:
            await self._run_blocking(self._write_local_ssconf, values)
            self._local_ssconf = values
        others = nodesmod.others(cfg)
        if not others:
            self._pushed_ssconf = values
            return None
        rpc = self._rpc()
        cands = [nodesmod.target(n) for n in nodesmod.candidates(cfg)]
        config_d = defer.Deferred.fromCoroutine(
            self._push_config(cfg, update, cands, whole=force_ssconf or update.record is None))
        behind = [n for n in others if "ssconf" in self.failures.get(n.name, {})]
        ss_targets = others if (force_ssconf or values != self._pushed_ssconf) else behind
        ss_d = rpc.call([nodesmod.target(n) for n in ss_targets], "write_ssconf_files",
                        [values], timeout=CONFIG_TIMEOUT)
        config_results = await config_d
        ss_results = await ss_d
        self._pushed_ssconf = values
        self._record(ss_results, "ssconf")
        failed = self._record(config_results, "config")
        if failed and majority_failed(config_results):
            names = ", ".join(sorted(r.node for r in failed))
            return (f"the configuration was saved on the master but only "
                    f"{len(config_results) - len(failed)} of {len(config_results)} other master "
                    f"candidates received it (failed: {names}); run 'gnt-cluster redist-conf' "
                    "once they are reachable")
        return None

    def _ssconf(self, cfg: ConfigData) -> dict[str, str]:
        """ssconf.compute, reusing the instance list while the instances are unchanged.

        Committed configs are never changed in place, so an unchanged
        container is the same object; the 20,000-name sort then is not redone.
        """
        cached = self._instance_list
        if cached is not None and cached[0] is cfg.instances:
            skeleton = copy.copy(cfg)
            skeleton.instances = {}
            values = ssconf.compute(skeleton)
            values["instance_list"] = cached[1]
            return values
        values = ssconf.compute(cfg)
        self._instance_list = (cfg.instances, values["instance_list"])
        return values

    async def _push_config(self, cfg: ConfigData, update: ConfigUpdateLike,
                           cands: list[NodeTarget], whole: bool) -> dict[str, RpcResult]:
        rpc = self._rpc()
        results: dict[str, RpcResult] = {}
        full = cands
        if not whole and update.record is not None and cands:
            results = await rpc.call(cands, "config_update", [update.record],
                                     timeout=CONFIG_TIMEOUT)
            behind = {name for name, r in results.items() if r.success and r.payload is not True}
            full = [t for t in cands if t.name in behind]
        if full:
            text = await update.text()
            results.update(await rpc.call(
                full, "upload_file",
                self.upload_args(self.paths.config_file, text, 0o640, cfg.mtime),
                timeout=CONFIG_TIMEOUT))
        return results

    def ancillary_files(self, named: Iterable[str] = ()) -> list[tuple[str, int]]:
        """The files redist-conf pushes to candidates besides config.data, that exist;
        ``named``: further wire paths (:meth:`vnc_password_files`).

        Blocking (it looks at the disk): call it through the I/O thread pool.
        """
        paths = self.paths
        files = [(paths.rapi_pem, 0o440), (paths.rapi_users, 0o640),
                 (paths.cluster_domain_secret, 0o400), (paths.hmac_key, 0o440)]
        files += [(rpcdefs.from_wire_path(paths.root, path), 0o640) for path in named]
        files += [(path, 0o644) for path in self.extra_files()]
        seen: set[str] = set()
        out = []
        for path, mode in files:
            if path not in seen and os.path.exists(path):
                seen.add(path)
                out.append((path, mode))
        return out

    @staticmethod
    def vnc_password_files(cfg: ConfigData) -> list[str]:
        """The VNC password files (wire paths) the hypervisor parameters name: the
        cluster's and the OSes' for the enabled hypervisors, and the instances' own
        (Ganeti's ancillary files of the VNC hypervisors)."""
        cl = cfg.cluster
        found: set[str] = set()
        for hv in cl.enabled_hypervisors:
            for os_name in [None, *sorted(cl.os_hvp)]:
                found.update(hvchecks.vnc_password_files(
                    hv, params_fill.hv_defaults(cl, hv, os_name)))
        for inst in cfg.instances.values():
            if hvchecks.VNC_PASSWORD_FILE in inst.hvparams:
                found.update(hvchecks.vnc_password_files(
                    inst.hypervisor, params_fill.fill_instance_hv(cl, inst)))
        return sorted(found)

    def extra_files(self) -> list[str]:
        """Absolute paths listed in CONF_DIR/redistribute-files (as on a node)."""
        try:
            with open(os.path.join(self.paths.conf_dir, EXTRA_FILES_NAME),
                      encoding="utf-8") as f:
                lines = f.read().splitlines()
        except OSError:
            return []
        return [rpcdefs.from_wire_path(self.paths.root, os.path.normpath(line.strip()))
                for line in lines if line.strip().startswith("/")]

    def _read_ancillary(self, named: list[str]) -> list[tuple[str, int, bytes]]:
        out = []
        for path, mode in self.ancillary_files(named):
            with open(path, "rb") as f:
                out.append((path, mode, f.read()))
        return out

    async def push_ancillary(self, targets: list[Node]) -> dict[str, list[RpcResult]]:
        """Upload the ancillary files to ``targets``; failed results per file name."""
        if not targets:
            return {}
        named = self.vnc_password_files(self._config())
        contents = await self._run_blocking(self._read_ancillary, named)
        rpc = self._rpc()
        out: dict[str, list[RpcResult]] = {}
        for path, mode, data in contents:
            results = await rpc.call([nodesmod.target(n) for n in targets], "upload_file",
                                     self.upload_args(path, data, mode))
            out[self.wire(path)] = self._record(results, f"file {self.wire(path)}")
        return out

    # --- job files -------------------------------------------------------------------

    def jobs_written(self, texts: dict[int, str], archives: list[int]) -> None:
        """The job store wrote these job files and archived these jobs (reactor thread)."""
        if not nodesmod.candidates(self._config()):
            return
        self._jobs_pending.append((dict(texts), list(archives)))
        if not self._jobs_busy:
            self._jobs_busy = True
            defer.Deferred.fromCoroutine(self._job_loop())

    async def _job_loop(self) -> None:
        try:
            while self._jobs_pending:
                batches, self._jobs_pending = self._jobs_pending, []
                texts: dict[int, str] = {}
                archives: list[int] = []
                for batch_texts, batch_archives in batches:
                    texts.update(batch_texts)
                    archives.extend(batch_archives)
                try:
                    await self._replicate_jobs(texts, archives)
                except Exception:
                    self.log.failure("Job file replication failed")
        finally:
            self._jobs_busy = False
            waiters, self._jobs_idle = self._jobs_idle, []
            for d in waiters:
                d.callback(None)

    async def _replicate_jobs(self, texts: dict[int, str], archives: list[int]) -> None:
        from ganeti.master.jobs.jobstore import archive_subdir, job_file_name
        targets = [nodesmod.target(n) for n in nodesmod.candidates(self._config())]
        if not targets:
            return
        updates = [[job_file_name(job_id), rpcdefs.encode_content(text)]
                   for job_id, text in sorted(texts.items())]
        renames = [[job_file_name(j), f"archive/{archive_subdir(j)}/{job_file_name(j)}"]
                   for j in archives]
        # one call per candidate and pass: under load passes grow instead of calls multiplying
        self._record(await self._rpc().call(targets, "jobqueue_update_many",
                                            [updates, renames], timeout=JOB_TIMEOUT),
                     "job queue")

    def jobs_idle(self) -> defer.Deferred[None]:
        """Fires when every job file handed over has been replicated (tests, shutdown)."""
        if not self._jobs_busy:
            return defer.succeed(None)
        d: defer.Deferred[None] = defer.Deferred()
        self._jobs_idle.append(d)
        return d

    async def copy_queue(self, targets: list[Node], texts: dict[int, str]) -> list[RpcResult]:
        """Give new candidates the live job files: purge their queue, then upload each."""
        from ganeti.master.jobs.jobstore import job_file_name
        if not targets:
            return []
        rpc = self._rpc()
        node_targets = [nodesmod.target(n) for n in targets]
        failed = self._record(await rpc.call(node_targets, "jobqueue_purge", []), "job queue")
        updates = [[job_file_name(job_id), rpcdefs.encode_content(text)]
                   for job_id, text in sorted(texts.items())]
        failed += self._record(await rpc.call(node_targets, "jobqueue_update_many",
                                              [updates, []]), "job queue")
        return failed

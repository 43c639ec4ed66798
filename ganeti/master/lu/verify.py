"""Cluster verification and redistribution of the config and ancillary files.

``OP_CLUSTER_VERIFY`` submits one ``OP_CLUSTER_VERIFY_CONFIG`` job and one
``OP_CLUSTER_VERIFY_GROUP`` job per node group and returns their ids, as in
Ganeti; each verify job reports its findings as log lines in Ganeti's form
(``  - ERROR: node node2: ...``) and returns True when it found no error.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ganeti.core import config as configmod
from ganeti.core import constants, ssconf
from ganeti.core.errors import ECODE_ENVIRON, OpExecError
from ganeti.core.objects import ConfigData, Node
from ganeti.master import nodes as nodesmod
from ganeti.master.lu.base import LogicalUnit

#: Largest clock difference between the master and a node before verify complains.
MAX_CLOCK_SKEW = 150.0

# Ganeti's error codes (cluster verify): (type, code)
ECLUSTERCFG = ("cluster", "ECLUSTERCFG")
ECLUSTERFILECHECK = ("cluster", "ECLUSTERFILECHECK")
ENODERPC = ("node", "ENODERPC")
ENODEVERSION = ("node", "ENODEVERSION")
ENODETIME = ("node", "ENODETIME")
ENODESSCONF = ("node", "ENODESSCONF")
ENODEHOSTNAME = ("node", "ENODEHOSTNAME")
ENODEREPLICATION = ("node", "ENODEREPLICATION")
ENODESETUP = ("node", "ENODESETUP")


class _Verifier(LogicalUnit):
    REQ_BGL = False

    @property
    def uses_locks(self) -> bool:
        return False

    def check_prereq(self) -> None:
        self.bad = False

    def _report(self, ecode: tuple[str, str], item: str, msg: str,
                warning: bool = False) -> None:
        kind, code = ecode
        ignored = code in (self.op.get("ignore_errors") or [])
        level = "WARNING" if warning or ignored else "ERROR"
        if self.op.get("error_codes"):
            line = f"  - {level}:{code}:{kind}:{item}:{msg}"
        else:
            line = f"  - {level}: {kind} {item}: {msg}" if item else f"  - {level}: {msg}"
        self.ctx.feedback("message", line)
        if level == "ERROR":
            self.bad = True

    def _step(self, text: str) -> None:
        self.ctx.feedback("message", f"* {text}")


class LUClusterVerify(LogicalUnit):
    """OP_CLUSTER_VERIFY: submit the verify jobs; ``{"jobs": [[true, id], ...]}``."""

    OP_ID = "OP_CLUSTER_VERIFY"
    REQ_BGL = False

    @property
    def uses_locks(self) -> bool:
        return False

    def check_prereq(self) -> None:
        cfg = self.ctx.config.config
        if self.op.get("group_name"):
            self.groups = [nodesmod.find_group(cfg, self.op["group_name"]).name]
        else:
            self.groups = [g.name for g in sorted(cfg.nodegroups.values(),
                                                  key=lambda g: g.name)]

    async def exec(self) -> Any:
        common: dict[str, Any] = {k: self.op[k] for k in ("debug_simulate_errors", "error_codes",
                                          "skip_checks", "ignore_errors", "verbose")
                  if k in self.op}
        jobs: list[list[dict[str, Any]]] = []
        if not self.op.get("group_name"):
            jobs.append([{"OP_ID": "OP_CLUSTER_VERIFY_CONFIG", **common}])
        for name in self.groups:
            jobs.append([{"OP_ID": "OP_CLUSTER_VERIFY_GROUP", "group_name": name, **common}])
        if self.ctx.submit_jobs is None:
            raise OpExecError("this master cannot submit jobs from a job", ECODE_ENVIRON)
        return {"jobs": await self.ctx.submit_jobs(jobs)}


class LUClusterVerifyConfig(_Verifier):
    """OP_CLUSTER_VERIFY_CONFIG: the config's consistency and the candidate pool."""

    OP_ID = "OP_CLUSTER_VERIFY_CONFIG"

    async def exec(self) -> Any:
        cfg = self.ctx.config.config
        self._step("Verifying cluster config")
        for problem in configmod.verify(cfg):
            self._report(ECLUSTERCFG, "", problem)
        current, desired = nodesmod.candidate_stats(cfg)
        if current < desired:
            self._report(ECLUSTERCFG, "", f"not enough master candidates: {current}, "
                                          f"desired {desired} (candidate_pool_size "
                                          f"{cfg.cluster.candidate_pool_size})")
        offline = sorted(n.name for n in cfg.nodes.values() if n.offline)
        if offline:
            self.ctx.feedback("message", f"  - NOTICE: {len(offline)} offline node(s) found: "
                                         f"{', '.join(offline)}")
        self._step("Verifying the job queue")
        master = cfg.nodes.get(cfg.cluster.master_node)
        for is_error, message in await self.ctx.run_blocking(self.ctx.queue_health):
            self._report(ENODESETUP, master.name if master else "", message,
                         warning=not is_error)
        if self.op.get("debug_simulate_errors"):
            self._report(ECLUSTERCFG, "", "simulated error")
        return not self.bad


def sha1_file(path: str) -> str | None:
    """The SHA-1 hex digest of a file, None if it does not exist."""
    try:
        with open(path, "rb") as f:
            return hashlib.sha1(f.read()).hexdigest()
    except FileNotFoundError:
        return None


class LUClusterVerifyGroup(_Verifier):
    """OP_CLUSTER_VERIFY_GROUP: reachability, versions, clocks, files and ssconf of nodes."""

    OP_ID = "OP_CLUSTER_VERIFY_GROUP"

    def check_prereq(self) -> None:
        super().check_prereq()
        self.group = nodesmod.find_group(self.ctx.config.config, self.op["group_name"])

    def _candidate_files(self) -> list[tuple[str, str | None]]:
        """``(path, sha1)`` of config.data and the ancillary files (blocking)."""
        rep = self.ctx.replicator
        files = [self.ctx.config.path]
        if rep is not None:
            files += [path for path, _ in rep.ancillary_files()]
        return [(path, sha1_file(path)) for path in files]

    async def exec(self) -> Any:
        ctx = self.ctx
        cfg = ctx.config.config
        members = sorted((n for n in cfg.nodes.values() if n.group == self.group.uuid),
                         key=lambda n: n.name)
        online = [n for n in members if not n.offline]
        self._step(f"Verifying node group {self.group.name} ({len(members)} nodes, "
                   f"{len(members) - len(online)} offline)")
        rep = ctx.replicator
        expected = {rep.wire(path) if rep else path: digest
                    for path, digest in await ctx.run_blocking(self._candidate_files)}
        checks = {"version": True, "hostname": True, "time": True, "ssconf": True,
                  "filelist": list(expected)}
        results = await ctx.rpc().call([nodesmod.target(n) for n in online], "node_verify",
                                       [checks, cfg.cluster.cluster_name])
        want_ssconf = {k: ssconf.file_content(v) for k, v in ssconf.compute(cfg).items()}
        now = ctx.clock.seconds()
        for node in online:
            self._verify_node(cfg, node, results[node.name], expected, want_ssconf, now)
        if rep is not None:
            for node in members:
                for failure in rep.failures.get(node.name, {}).values():
                    self._report(ENODEREPLICATION, node.name,
                                 f"replication of {failure.what} failed: {failure.message}",
                                 warning=True)
        if self.op.get("debug_simulate_errors"):
            self._report(ENODERPC, "(simulated)", "simulated error")
        return not self.bad

    def _verify_node(self, cfg: ConfigData, node: Node, result: Any,
                     expected: dict[str, str | None], want_ssconf: dict[str, str],
                     now: float) -> None:
        if not result.success:
            self._report(ENODERPC, node.name, f"while contacting node: {result.fail_msg}")
            return
        data = result.payload if isinstance(result.payload, dict) else {}
        version = data.get("version")
        if not isinstance(version, list) or not version or (
                version[0] != constants.PROTOCOL_VERSION):
            self._report(ENODEVERSION, node.name, f"incompatible protocol version: master "
                                                  f"{constants.PROTOCOL_VERSION}, node "
                                                  f"{version}")
        elif len(version) > 1 and version[1] != constants.RELEASE_VERSION:
            self._report(ENODEVERSION, node.name, f"software version mismatch: master "
                                                  f"{constants.RELEASE_VERSION}, node "
                                                  f"{version[1]}", warning=True)
        if data.get("hostname") not in (None, node.name):
            self._report(ENODEHOSTNAME, node.name,
                         f"node calls itself {data.get('hostname')!r}")
        node_time = data.get("time")
        if isinstance(node_time, (int, float)) and abs(node_time - now) > MAX_CLOCK_SKEW:
            self._report(ENODETIME, node.name, f"clock skew of {node_time - now:.1f}s "
                                               "with the master")
        if node.master_candidate or node.uuid == cfg.cluster.master_node:
            got = data.get("filelist") or {}
            for path, digest in expected.items():
                if digest is None:
                    continue
                theirs = got.get(path)
                if theirs is None:
                    self._report(ECLUSTERFILECHECK, node.name, f"file {path} is missing")
                elif theirs != digest:
                    self._report(ECLUSTERFILECHECK, node.name,
                                 f"file {path} differs from the master's copy; run "
                                 "'gnt-cluster redist-conf'")
        theirs_ss = data.get("ssconf")
        if isinstance(theirs_ss, dict):
            stale = sorted(k for k, v in want_ssconf.items() if theirs_ss.get(k) != v)
            if stale:
                shown = ", ".join(stale[:5]) + (" ..." if len(stale) > 5 else "")
                self._report(ENODESSCONF, node.name, f"{len(stale)} ssconf file(s) differ "
                                                     f"from the master's: {shown}")


class LUClusterRedistConf(LogicalUnit):
    """OP_CLUSTER_REDIST_CONF: config to candidates, ssconf to all, ancillary files."""

    OP_ID = "OP_CLUSTER_REDIST_CONF"
    REQ_BGL = True

    async def exec(self) -> Any:
        ctx = self.ctx
        cfg = ctx.config.config
        rep = ctx.replicator
        problem = await ctx.config.redistribute()
        if rep is None:
            return None
        cands = [n for n in nodesmod.candidates(cfg) if not n.offline]
        failed_files = await rep.push_ancillary(cands)
        failures: list[str] = []
        for node in nodesmod.others(cfg):
            for failure in rep.failures.get(node.name, {}).values():
                failures.append(f"{node.name}: {failure.what}: {failure.message}")
        for path, results in failed_files.items():
            for result in results:
                ctx.feedback("message", f"Warning: copy of {path} to {result.node} failed: "
                                        f"{result.fail_msg}")
        for line in failures:
            ctx.feedback("message", f"Warning: {line}")
        if problem is not None:
            raise OpExecError(problem)
        others = [n.name for n in nodesmod.others(cfg) if not n.offline]
        ctx.feedback("message", f"Redistributed the configuration to {len(others)} node(s)"
                     + (f" ({len(failures)} failure(s))" if failures else ""))
        return None


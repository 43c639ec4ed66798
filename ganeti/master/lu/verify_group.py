"""``OP_CLUSTER_VERIFY_GROUP``: the nodes of one group, as Ganeti's LUClusterVerifyGroup.

One ``node_verify`` call per online node gathers everything (Ganeti's
``node_verify`` RPC); the master then checks, printing Ganeti's steps:
client certificates (``ECLUSTERCLIENTCERT``), file consistency across nodes
(``ECLUSTERFILECHECK``, ``ENODEFILECHECK``), reachability (``ENODERPC``),
versions (``ENODEVERSION``), node setup and the job queue
(``ENODESETUP``), clocks (``ENODETIME``), node daemon connectivity
(``ENODENET``), user scripts, out-of-band helpers, file storage
directories, free memory (``ENODEHV``) and N+1 memory (``ENODEN1``),
the volumes of the cluster's volume group (``ENODELVM``) and those no instance
disk owns (``ENODEORPHANLV``, a warning, as Ganeti's; ``reserved_lvs`` are
regular expressions a volume may match whole to be left alone).  Ours, not
Ganeti's: files in the file storage directories that no file disk owns are
warned about under the same code (``file ... is unknown``).
DRBD, OS and hook checks come with instances and storage.
"""

from __future__ import annotations

import re
from typing import Any

from ganeti.core import constants, params_fill, rpcdefs, ssconf
from ganeti.core import hooks as hookdefs
from ganeti.core import verifycodes as cv
from ganeti.core.certverify import MAX_CLOCK_SKEW
from ganeti.core.objects import ConfigData, Node
from ganeti.core.opcodes.views import OpClusterVerifyGroup
from ganeti.core.textutil import safe_encode
from ganeti.master.config import nodes as nodesmod
from ganeti.master.lu import instance_drbd, instance_storage
from ganeti.master.lu.base import LogicalUnit
from ganeti.master.lu.hooks import NodeHooks
from ganeti.master.lu.storage import instance_lvs
from ganeti.master.lu.verify_report import VerifyReporter
from ganeti.rpc.client import RpcResult

#: The user script Ganeti runs to set up the master IP when asked to (wire path).
EXTERNAL_MIP_SCRIPT = "/etc/ganeti/scripts/master-ip-setup"
#: Where the node files live, as wire paths (every node's DATA_DIR).
DATA_DIR = "/var/lib/ganeti"
RAPI_USERS = f"{DATA_DIR}/rapi/users"

#: Hook output is indented under its finding, as Ganeti's.
_HOOKS_INDENT_RE = re.compile("^", re.M)

_REBUILD_CERTS = ("To rebuild node certificates, copy the master's server.pem to the "
                  "node and restart its node daemon.")


def _nice_join(names: Any) -> str:
    return ", ".join(sorted(names))


class FileMap:
    """Which files which nodes must hold (Ganeti's ComputeAncillaryFiles, our layout).

    ``all_nodes``: every node (the node certificate, the ssconf files);
    ``candidates``: the master and the candidates (the config and the
    ancillary files redist-conf pushes); ``optional``: files that must be
    on all or none of the nodes of their category.
    """

    def __init__(self, all_nodes: set[str], candidates: set[str], optional: set[str]) -> None:
        self.all_nodes = all_nodes
        self.candidates = candidates
        self.optional = optional

    def every(self) -> list[str]:
        return sorted(self.all_nodes | self.candidates)


class LUClusterVerifyGroup(VerifyReporter, LogicalUnit):
    """OP_CLUSTER_VERIFY_GROUP: True when no ERROR was found."""

    OP_ID = "OP_CLUSTER_VERIFY_GROUP"
    REQ_BGL = False
    op: OpClusterVerifyGroup
    HPATH = "cluster-verify"
    HTYPE = hookdefs.HTYPE_CLUSTER

    def _hook_members(self) -> list[Node]:
        cfg = self.ctx.config.config
        return sorted((n for n in cfg.nodes.values() if n.group == self.group.uuid),
                      key=lambda n: n.name)

    def build_hooks_env(self) -> dict[str, Any]:
        """Ganeti's: the cluster's tags and each of the group's nodes' tags."""
        env = {"CLUSTER_TAGS": " ".join(sorted(self.ctx.config.config.cluster.tags))}
        env.update((f"NODE_TAGS_{n.name}", " ".join(sorted(n.tags)))
                   for n in self._hook_members())
        return env

    def build_hooks_nodes(self) -> tuple[list[str], list[str]]:
        """Ganeti's: post hooks only, on the group's nodes."""
        return [], [n.uuid for n in self._hook_members()]

    def hooks_callback(self, phase: str, found: list[NodeHooks] | None, result: Any) -> Any:
        """Ganeti's: the post hooks' failures are findings (``ENODEHOOKS``) and
        make the result false."""
        if phase != hookdefs.PHASE_POST or not self._hook_members():
            return result
        self.step("Hooks Results")
        for node in found or []:
            broken = bool(node.fail_msg) and not node.offline
            self.error_if(broken, cv.ENODEHOOKS, node.uuid,
                          f"Communication failure in hooks execution: {node.fail_msg}")
            if broken:
                result = False
                continue
            if node.offline:
                continue
            for script, status, output in node.results:
                failed = status == hookdefs.HKR_FAIL
                self.error_if(failed, cv.ENODEHOOKS, node.uuid,
                              f"Script {script} failed, output:")
                if failed:
                    self.note(_HOOKS_INDENT_RE.sub("      ", output))
                    result = False
        return result

    def check_prereq(self) -> None:
        super().check_prereq()
        self.group = nodesmod.find_group(self.ctx.config.config, self.op.group_name)

    # --- what to ask -----------------------------------------------------------------

    def _file_map(self, cfg: ConfigData) -> FileMap:
        data = DATA_DIR
        # Ganeti's ComputeAncillaryFiles: everything on every node but config.data
        all_nodes = {f"{data}/server.pem", f"{data}/rapi.pem", f"{data}/hmac.key",
                     f"{data}/cluster-domain-secret", RAPI_USERS}
        all_nodes |= {f"{data}/ssconf_{key}" for key in ssconf.compute(cfg)}
        rep = self.ctx.replicator
        if rep is not None:
            all_nodes |= {rep.wire(p) for p in rep.extra_files()}
            # the VNC password files the hypervisor parameters name (redist-conf ships them)
            all_nodes |= set(rep.vnc_password_files(cfg))
        return FileMap(all_nodes, {f"{data}/config.data"}, {RAPI_USERS})

    def _checks(self, cfg: ConfigData, members: list[Node], filemap: FileMap,
                is_master_group: bool) -> dict[str, Any]:
        cluster = cfg.cluster
        online = [n for n in members if not n.offline]
        checks: dict[str, Any] = {
            "version": True, "hostname": True, "time": True, "nodesetup": True,
            "client_cert": True, "hvinfo": True, "filelist": filemap.every(),
            "userscripts": [EXTERNAL_MIP_SCRIPT] if cluster.use_external_mip_script else [],
            "node_net_test": [[n.name, n.primary_ip, self._noded_port()] for n in online],
        }
        oob = sorted({p for n in cfg.nodes.values()
                      if (p := self._oob_program(cfg, n))})
        if oob:
            checks["oob_paths"] = oob
        templates = set(cluster.enabled_disk_templates)
        if constants.DT_FILE in templates or constants.DT_SHARED_FILE in templates:
            checks["accepted_storage_paths"] = is_master_group
            # as configured, even '/boot/': the node says why it is unusable (Ganeti's)
            if constants.DT_FILE in templates and cluster.file_storage_dir:
                checks["file_storage_path"] = cluster.file_storage_dir
            if constants.DT_SHARED_FILE in templates and cluster.shared_file_storage_dir:
                checks["shared_file_storage_path"] = cluster.shared_file_storage_dir
            dirs = sorted({checks[k] for k in ("file_storage_path", "shared_file_storage_path")
                           if k in checks and rpcdefs.is_wire_path(checks[k])})
            if dirs:
                checks["file_storage_files"] = dirs
        if cluster.volume_group_name:  # Ganeti's NV_LVLIST
            checks["lvlist"] = cluster.volume_group_name
        return checks

    def _noded_port(self) -> int:
        rpc = self.ctx.rpc()
        return int(getattr(rpc, "port", constants.DEFAULT_NODED_PORT))

    @staticmethod
    def _oob_program(cfg: ConfigData, node: Node) -> str:
        group = cfg.nodegroups.get(node.group)
        value = node.ndparams.get("oob_program")
        if value is None and group is not None:
            value = group.ndparams.get("oob_program")
        if value is None:
            value = cfg.cluster.ndparams.get("oob_program")
        return value or ""

    # --- the run ---------------------------------------------------------------------

    async def exec(self) -> Any:
        ctx = self.ctx
        cfg = ctx.config.config
        self.step(f"Verifying group '{self.group.name}'")
        members = sorted((n for n in cfg.nodes.values() if n.group == self.group.uuid),
                         key=lambda n: n.name)
        if not members:
            self.step("Empty node group, skipping verification")
            return True
        master_uuid = cfg.cluster.master_node
        filemap = self._file_map(cfg)
        self.step(f"Gathering data ({len(members)} nodes)")
        checks = self._checks(cfg, members, filemap,
                              any(n.uuid == master_uuid for n in members))
        online = [n for n in members if not n.offline]
        self.step(f"Gathering information about nodes ({len(members)} nodes)")
        started = ctx.clock.seconds()
        rpc = ctx.rpc()
        results: dict[str, RpcResult] = await rpc.call(
            [nodesmod.target(n) for n in online], "node_verify",
            [checks, cfg.cluster.cluster_name])
        ended = ctx.clock.seconds()
        file_nodes = list(members)
        file_results = dict(results)
        master = cfg.nodes.get(master_uuid)
        if master is not None and master.group != self.group.uuid:
            self.step("Gathering information about the master node")
            file_results[master.name] = await rpc.call_one(
                master, "node_verify", [{"filelist": filemap.every()}, cfg.cluster.cluster_name])
            file_nodes.append(master)
        self.step(f"Gathering disk information ({len(members)} nodes)")
        self.step("Verifying configuration file consistency")
        self._verify_client_certs(cfg, members, results)
        self._verify_files(cfg, file_nodes, file_results, filemap)
        self.step("Verifying node status")
        n_offline = n_drained = 0
        mfree: dict[str, int] = {}
        volumes: dict[str, dict[str, Any]] = {}
        for node in members:
            if node.offline:
                if self.op.verbose:
                    self.step(f"Skipping offline node {node.name}")
                n_offline += 1
                continue
            if node.uuid == master_uuid:
                ntype = "master"
            elif node.master_candidate:
                ntype = "master candidate"
            elif node.drained:
                ntype = "drained"
                n_drained += 1
            else:
                ntype = "regular"
            if self.op.verbose:
                self.step(f"Verifying node {node.name} ({ntype})")
            result = results[node.name]
            if self.error_if(not result.success, cv.ENODERPC, node.name,
                             f"while contacting node: {result.fail_msg}"):
                continue
            data = result.payload
            if not self._verify_node(node, data, node.uuid == master_uuid):
                continue
            await self._verify_queue(node, node.uuid == master_uuid)
            self._verify_time(node, data, started, ended)
            self._verify_network(node, data)
            self._verify_user_scripts(node, data)
            self._verify_oob(node, data)
            self._verify_storage(cfg, node, data, node.uuid == master_uuid)
            if node.vm_capable:
                free = self._node_memory(node, data)
                if free is not None:
                    mfree[node.uuid] = free
                lvs = self._node_volumes(node, data, cfg.cluster.volume_group_name)
                if lvs is not None:
                    volumes[node.uuid] = lvs
        self._report_replication(members)
        self.step("Verifying instance status")
        await self._verify_instances(cfg, members, results)
        self.step("Verifying orphan volumes")
        self._verify_orphan_volumes(cfg, volumes)
        self._verify_orphan_files(cfg, members, results)
        if constants.VERIFY_NPLUSONE_MEM not in (self.op.skip_checks or []):
            self.step("Verifying N+1 Memory redundancy")
            self._verify_n_plus_one(cfg, members, mfree)
        self.step("Other Notes")
        if n_offline:
            self.note(f"  - NOTICE: {n_offline} offline node(s) found.")
        if n_drained:
            self.note(f"  - NOTICE: {n_drained} drained node(s) found.")
        if self.ctx.hooks is None:  # else hooks_callback prints it, after the hooks ran
            self.step("Hooks Results")
        return not self.bad

    # --- per-node checks -------------------------------------------------------------

    def _verify_node(self, node: Node, data: Any, is_master: bool) -> bool:
        """Shape, versions, hostname and node setup; False if the rest cannot be trusted."""
        if self.error_if(not data or not isinstance(data, dict), cv.ENODERPC, node.name,
                         "unable to verify node: no data returned"):
            return False
        version = data.get("version")
        if self.error_if(not (isinstance(version, list) and len(version) == 2), cv.ENODERPC,
                         node.name, "connection to node returned invalid data"):
            return False
        if self.error_if(version[0] != constants.PROTOCOL_VERSION, cv.ENODEVERSION, node.name,
                         f"incompatible protocol versions: master "
                         f"{constants.PROTOCOL_VERSION}, node {version[0]}"):
            return False
        self.error_if(version[1] != constants.RELEASE_VERSION, cv.ENODEVERSION, node.name,
                      f"software version mismatch: master {constants.RELEASE_VERSION}, "
                      f"node {version[1]}", warning=True)
        hostname = data.get("hostname")
        self.error_if(hostname not in (None, node.name), cv.ENODERPC, node.name,
                      f"the node daemon answers as node {hostname!r}")
        setup = data.get("nodesetup", ["Missing NODESETUP results"])
        self.error_if(setup, cv.ENODESETUP, node.name,
                      f"node setup error: {'; '.join(setup) if isinstance(setup, list) else setup}")
        return True

    async def _verify_queue(self, node: Node, is_master: bool) -> None:
        """The job queue's health, on the master (ENODESETUP)."""
        if not is_master:
            return
        for is_error, message in await self.ctx.run_blocking(self.ctx.queue_health):
            self.report(cv.ENODESETUP, node.name, f"job queue: {message}",
                        warning=not is_error)

    def _verify_time(self, node: Node, data: dict[str, Any], started: float,
                     ended: float) -> None:
        ntime = data.get("time")
        if not isinstance(ntime, (int, float)) or isinstance(ntime, bool):
            self.error_if(True, cv.ENODETIME, node.name, "Node returned invalid time")
            return
        diff = None
        if ntime < started - MAX_CLOCK_SKEW:
            diff = f"{abs(started - ntime):.1f}s"
        elif ntime > ended + MAX_CLOCK_SKEW:
            diff = f"{abs(ntime - ended):.1f}s"
        self.error_if(diff is not None, cv.ENODETIME, node.name,
                      f"Node time diverges by at least {diff} from master node time")

    def _verify_network(self, node: Node, data: dict[str, Any]) -> None:
        net = data.get("node_net_test")
        if not isinstance(net, dict):
            self.report(cv.ENODENET, node.name, "node hasn't returned node tcp connectivity data")
        elif net:
            self.report(cv.ENODENET, node.name,
                        [f"tcp communication with node '{name}': {net[name]}"
                         for name in sorted(net)])

    def _verify_user_scripts(self, node: Node, data: dict[str, Any]) -> None:
        if self.error_if("userscripts" not in data, cv.ENODEUSERSCRIPTS, node.name,
                         "did not return user scripts information"):
            return
        broken = data.get("userscripts") or []
        self.error_if(broken, cv.ENODEUSERSCRIPTS, node.name,
                      f"user scripts not present or not executable: {_nice_join(broken)}")

    def _verify_oob(self, node: Node, data: dict[str, Any]) -> None:
        if (node.master_candidate or node.master_capable) and "oob_paths" in data:
            for problem in data["oob_paths"] or []:
                self.error_if(problem, cv.ENODEOOBPATH, node.name, str(problem))

    def _verify_storage(self, cfg: ConfigData, node: Node, data: dict[str, Any],
                        is_master: bool) -> None:
        templates = set(cfg.cluster.enabled_disk_templates)
        if is_master and templates & {constants.DT_FILE, constants.DT_SHARED_FILE}:
            if "accepted_storage_paths" not in data:
                self.error_if(True, cv.ENODEFILESTORAGEPATHS, node.name,
                              "Node did not return forbidden file storage paths")
            else:
                wrong = data["accepted_storage_paths"]
                self.error_if(wrong, cv.ENODEFILESTORAGEPATHS, node.name,
                              f"Found forbidden file storage paths: {', '.join(wrong)}")
        for template, key, code in (
                (constants.DT_FILE, "file_storage_path", cv.ENODEFILESTORAGEPATHUNUSABLE),
                (constants.DT_SHARED_FILE, "shared_file_storage_path",
                 cv.ENODESHAREDFILESTORAGEPATHUNUSABLE)):
            if template in templates:
                self.error_if(key in data, code, node.name,
                              f"The configured {template} storage path is unusable: "
                              f"{data.get(key)}")

    def _node_memory(self, node: Node, data: dict[str, Any]) -> int | None:
        info = data.get("hvinfo")
        if not isinstance(info, dict) or "memory_free" not in info:
            self.error_if(True, cv.ENODEHV, node.name, "rpc call to node failed (hvinfo)")
            return None
        try:
            return int(info["memory_free"])
        except (TypeError, ValueError):
            self.error_if(True, cv.ENODERPC, node.name,
                          "node returned invalid nodeinfo, check hypervisor")
            return None

    def _report_replication(self, members: list[Node]) -> None:
        rep = self.ctx.replicator
        if rep is None:
            return
        for node in members:
            for failure in rep.failures.get(node.name, {}).values():
                self.report(cv.ENODESETUP, node.name, f"replication of {failure.what} "
                                                      f"failed: {failure.message}",
                            warning=True)

    # --- cross-node checks -----------------------------------------------------------

    def _verify_client_certs(self, cfg: ConfigData, members: list[Node],
                             results: dict[str, RpcResult]) -> None:
        """Every node uses the cluster certificate; the map lists candidates only."""
        found = False

        def cert_error(message: str) -> None:
            nonlocal found
            self.report(cv.ECLUSTERCLIENTCERT, None, message)
            found = True
        certs = cfg.cluster.candidate_certs
        if not certs:
            self.report(cv.ECLUSTERCLIENTCERT, None,
                        "The cluster's list of master candidate certificates is empty. "
                        "This may be because you just updated the cluster. " + _REBUILD_CERTS)
            return
        expected = certs.get(cfg.cluster.master_node)
        for node in members:
            if node.offline:
                continue
            result = results[node.name]
            if not result.success or not isinstance(result.payload, dict):
                continue
            level, msg = (result.payload.get("client_cert") or [None, None])[:2]
            if level is not None:
                cert_error(f"Client certificate of node '{node.uuid}' failed validation: "
                           f"{msg} (code '{level}')")
            elif expected is not None and msg != expected:
                cert_error(f"Client certificate digest of node '{node.uuid}' does not match "
                           f"the cluster certificate. Expected: {expected} Got: {msg}")
            if node.uuid in certs and not node.master_candidate:
                cert_error(f"Node '{node.uuid}' is not a master candidate, but still listed "
                           "in the map of master candidate certificates.")
        if found:
            cert_error(_REBUILD_CERTS)

    def _verify_files(self, cfg: ConfigData, nodes: list[Node],
                      results: dict[str, RpcResult], filemap: FileMap) -> None:
        """Ganeti's file consistency check: presence by category, one checksum each."""
        master_uuid = cfg.cluster.master_node
        names = {n.uuid: n.name for n in nodes}
        expected: dict[str, set[str]] = {}
        for path in filemap.all_nodes:
            expected[path] = {n.uuid for n in nodes}
        for path in filemap.candidates:
            expected[path] = {n.uuid for n in nodes
                              if n.master_candidate or n.uuid == master_uuid}
        fileinfo: dict[str, dict[str, set[str]]] = {path: {} for path in expected}
        ignore: set[str] = set()
        for node in nodes:
            if node.offline:
                ignore.add(node.uuid)
                continue
            result = results.get(node.name)
            got = (result.payload.get("filelist") if result is not None and result.success
                   and isinstance(result.payload, dict) else None)
            if not (got and isinstance(got, dict)):
                self.error_if(True, cv.ENODEFILECHECK, node.name,
                              "Node did not return file checksum data")
                ignore.add(node.uuid)
                continue
            for path, digest in got.items():
                if path in fileinfo and isinstance(digest, str):
                    fileinfo[path].setdefault(digest, set()).add(node.uuid)
        for path in sorted(fileinfo):
            checksums = fileinfo[path]
            with_file = {u for uuids in checksums.values() for u in uuids} - ignore
            want = expected[path] - ignore
            missing = want - with_file
            if path in filemap.optional:
                self.error_if(missing and missing != want, cv.ECLUSTERFILECHECK, None,
                              f"File {path} is optional, but it must exist on all or no "
                              f"nodes (not found on {_nice_join(names[u] for u in missing)})")
            else:
                self.error_if(missing, cv.ECLUSTERFILECHECK, None,
                              f"File {path} is missing from node(s) "
                              f"{_nice_join(names[u] for u in missing)}")
                unexpected = with_file - want
                self.error_if(unexpected, cv.ECLUSTERFILECHECK, None,
                              f"File {path} should not exist on node(s) "
                              f"{_nice_join(names[u] for u in unexpected)}")
            variants = ""
            if len(checksums) > 1:
                variants = "; ".join(
                    f"variant {idx + 1} on {_nice_join(names[u] for u in uuids)}"
                    for idx, (_, uuids) in enumerate(sorted(checksums.items())))
            self.error_if(len(checksums) > 1, cv.ECLUSTERFILECHECK, None,
                          f"File {path} found with {len(checksums)} different checksums "
                          f"({variants})")

    async def _verify_instances(self, cfg: ConfigData, members: list[Node],
                                results: dict[str, RpcResult]) -> None:
        """Instances run where the config says and nowhere else; their disks exist.

        Ganeti's EINSTANCEDOWN (admin up, not running on its primary),
        EINSTANCEWRONGNODE (running on a node that is not its primary) and
        ENODEORPHANINSTANCE (a node runs an instance the config does not know);
        EINSTANCEMISSINGDISK for devices missing on a node."""
        ok_nodes = [n for n in members if not n.offline and results.get(n.name) is not None
                    and results[n.name].success]
        member_ids = {n.uuid for n in members}
        instances = sorted((i for i in cfg.instances.values()
                            if i.primary_node in member_ids), key=lambda i: i.name)
        if not ok_nodes and not instances:
            return
        hvs = sorted(set(cfg.cluster.enabled_hypervisors))
        hvparams = {hv: params_fill.fill_hv(cfg.cluster, hv, None, {}) for hv in hvs}
        listing = await self.ctx.rpc().call([nodesmod.target(n) for n in ok_nodes],
                                            "instance_list", [hvs, hvparams])
        running: dict[str, set[str]] = {}
        for node in ok_nodes:
            result = listing.get(node.name)
            if result is None or not result.success:
                self.error_if(True, cv.ENODEHV, node.name,
                              f"hypervisor instance list failed: "
                              f"{result.fail_msg if result else 'no answer'}")
                continue
            running[node.uuid] = set(result.payload or [])
        by_name = {i.name: i for i in cfg.instances.values()}
        for node in ok_nodes:
            for name in sorted(running.get(node.uuid, ())):
                inst = by_name.get(name)
                if inst is None:
                    self.error_if(True, cv.ENODEORPHANINSTANCE, node.name,
                                  f"instance {name} on node {node.name} should not exist")
                elif inst.primary_node != node.uuid:
                    self.error_if(True, cv.EINSTANCEWRONGNODE, name,
                                  f"instance should not run on node {node.name}")
        for inst in instances:
            pnode = cfg.nodes.get(inst.primary_node)
            if pnode is None or pnode.offline or pnode.uuid not in running:
                continue
            self.error_if(inst.admin_state == constants.ADMINST_UP
                          and inst.name not in running[pnode.uuid], cv.EINSTANCEDOWN,
                          inst.name, f"instance not running on its primary node {pnode.name}")
            if inst.disks and not inst.forthcoming:  # a reservation's exist nowhere yet
                for problem in await instance_storage.check_disks_exist(self, cfg, inst):
                    self.error_if(True, cv.EINSTANCEMISSINGDISK, inst.name, problem)
                for error, text in await instance_drbd.degraded_disks(self, cfg, inst):
                    self.error_if(True, cv.EINSTANCEFAULTYDISK, inst.name, text,
                                  warning=not error)

    def _node_volumes(self, node: Node, data: dict[str, Any],
                      vg_name: str | None) -> dict[str, Any] | None:
        """The node's volumes (Ganeti's _UpdateNodeVolumes); None when there is no
        volume group or the node's LV data is unusable (ENODELVM)."""
        if not vg_name:
            return None
        lvdata = data.get("lvlist", "Missing LV data")
        if isinstance(lvdata, str):
            self.error_if(True, cv.ENODELVM, node.name,
                          f"LVM problem on node: {safe_encode(lvdata)}")
            return None
        if not isinstance(lvdata, dict):
            self.error_if(True, cv.ENODELVM, node.name, "rpc call to node failed (lvlist)")
            return None
        return lvdata

    def _verify_orphan_volumes(self, cfg: ConfigData,
                               volumes: dict[str, dict[str, Any]]) -> None:
        """Volumes of the cluster's volume group that no instance disk owns and no
        ``reserved_lvs`` pattern matches (Ganeti's _VerifyOrphanVolumes): warnings.
        ``volumes`` holds only the healthy nodes of the group."""
        vg_name = cfg.cluster.volume_group_name
        known = instance_lvs(cfg)
        reserved = []
        for pattern in cfg.cluster.reserved_lvs or []:
            try:
                reserved.append(re.compile(pattern))
            except re.error:
                continue
        for node_uuid in sorted(volumes, key=lambda u: cfg.nodes[u].name):
            for volume in sorted(volumes[node_uuid]):
                if volume.split("/")[0] != vg_name:
                    continue
                self.error_if((node_uuid, volume) not in known
                              and not any(r.fullmatch(volume) for r in reserved),
                              cv.ENODEORPHANLV, cfg.nodes[node_uuid].name,
                              f"volume {volume} is unknown", warning=True)

    def _verify_orphan_files(self, cfg: ConfigData, members: list[Node],
                             results: dict[str, RpcResult]) -> None:
        """Ours: files in the file storage directories that no file disk owns
        (warnings).  A local file disk belongs to its nodes, a shared one to all."""
        local: set[tuple[str, str]] = set()
        shared: set[str] = set()
        for inst in cfg.instances.values():
            for disk in (cfg.disks[u] for u in inst.disks if u in cfg.disks):
                lid = disk.logical_id
                if not (lid and len(lid) == 2 and isinstance(lid[1], str)):
                    continue
                if disk.dev_type == constants.DT_SHARED_FILE:
                    shared.add(lid[1])
                elif disk.dev_type == constants.DT_FILE:
                    local.update((n, lid[1]) for n in (disk.nodes or [inst.primary_node]))
        for node in members:
            result = results.get(node.name)
            if node.offline or not node.vm_capable or result is None or not result.success:
                continue
            listing = result.payload.get("file_storage_files") \
                if isinstance(result.payload, dict) else None
            if not isinstance(listing, dict):
                continue
            for files in listing.values():
                if not isinstance(files, list):
                    continue  # unreadable: the file storage path check says why
                for path in files:
                    self.error_if(isinstance(path, str) and path not in shared
                                  and (node.uuid, path) not in local,
                                  cv.ENODEORPHANLV, node.name, f"file {path} is unknown",
                                  warning=True)

    def _verify_n_plus_one(self, cfg: ConfigData, members: list[Node],
                           mfree: dict[str, int]) -> None:
        """Each secondary node must hold the auto-balanced instances of any one primary."""
        member_ids = {n.uuid for n in members if not n.offline}
        needed: dict[tuple[str, str], int] = {}
        for inst in cfg.instances.values():
            be = params_fill.fill_instance_be(cfg.cluster, inst)
            if not be.get("auto_balance", True):
                continue
            secondaries = nodesmod.instance_nodes(cfg, inst) - {inst.primary_node}
            for snode in sorted(secondaries | set(inst.secondary_nodes or [])):
                if snode in member_ids:
                    key = (snode, inst.primary_node)
                    needed[key] = needed.get(key, 0) + int(be.get("minmem", 0))
        for (snode, pnode), mem in sorted(needed.items()):
            free = mfree.get(snode, 0)
            self.error_if(free < mem, cv.ENODEN1, cfg.nodes[snode].name,
                          "not enough memory to accomodate instance failovers should node "
                          f"{cfg.nodes[pnode].name if pnode in cfg.nodes else pnode} fail "
                          f"({mem}MiB needed, {free}MiB available)")

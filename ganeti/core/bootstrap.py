"""Cluster initialisation: everything ``gnt-cluster init`` creates on the first node.

``build_config`` validates every option and builds the config without touching
the disk; ``initialise`` then writes the directories, keys, certificates,
users file, ssconf files, job queue and ``config.data``.  If anything fails
part-way, everything created so far is removed again, so a failed init
leaves nothing half-made.
"""

from __future__ import annotations

import copy
import ipaddress
import os
import re
import secrets
import shutil
import socket
import time
import uuid as uuidlib
from dataclasses import dataclass, field
from typing import Any

from ganeti.core import config as configmod
from ganeti.core import constants, crypto, fileutil, params, ssconf, uidpool
from ganeti.core.errors import ECODE_ENVIRON, ECODE_INVAL, ECODE_RESOLVER, OpPrereqError
from ganeti.core.objects import Cluster, ConfigData, Node, NodeGroup
from ganeti.core.opcodes import kinds
from ganeti.core.paths import Paths

# Matched whole (fullmatch): "$" would accept a value ending in a newline.
_MAC_PREFIX_RE = re.compile(r"[0-9a-f]{2}:[0-9a-f]{2}:[0-9a-f]{2}")
BE_SIZES = frozenset({constants.BE_MAXMEM, constants.BE_MINMEM})
DEFAULT_RAPI_USER = "gnt-admin"


@dataclass
class InitOptions:
    """What ``gnt-cluster init`` was asked to do (already split, not yet checked)."""

    cluster_name: str
    primary_ip: str | None = None
    secondary_ip: str | None = None
    master_ip: str | None = None
    master_netdev: str = constants.DEFAULT_MASTER_NETDEV
    master_netmask: int | None = None
    enabled_hypervisors: list[str] = field(default_factory=lambda: [constants.HT_KVM])
    hvparams: dict[str, dict[str, str]] = field(default_factory=dict)
    beparams: dict[str, str] = field(default_factory=dict)
    nicparams: dict[str, str] = field(default_factory=dict)
    ndparams: dict[str, str] = field(default_factory=dict)
    candidate_pool_size: int = constants.DEFAULT_CANDIDATE_POOL_SIZE
    uid_pool: str = ""
    default_iallocator: str = ""
    enabled_disk_templates: list[str] = field(
        default_factory=lambda: [constants.DT_DRBD8, constants.DT_PLAIN])
    file_storage_dir: str = constants.DEFAULT_FILE_STORAGE_DIR
    shared_file_storage_dir: str = constants.DEFAULT_SHARED_FILE_STORAGE_DIR
    gluster_storage_dir: str = constants.DEFAULT_GLUSTER_STORAGE_DIR
    mac_prefix: str = constants.DEFAULT_MAC_PREFIX
    vg_name: str | None = None
    drbd_helper: str | None = None
    maintain_node_health: bool = False
    modify_etc_hosts: bool = False
    rapi_user: str = DEFAULT_RAPI_USER


@dataclass
class InitResult:
    """What an init produced that the caller must show once."""

    config: ConfigData
    rapi_user: str
    rapi_password: str


def _resolve(name: str, what: str, option: str) -> str:
    try:
        return socket.gethostbyname(name)
    except OSError:
        raise OpPrereqError(f"Cannot resolve {what} {name!r}; give its address with {option}",
                            ECODE_RESOLVER) from None


def _check_ip(value: str, what: str) -> str:
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise OpPrereqError(f"Invalid {what} {value!r}: not an IP address", ECODE_INVAL) from None


def _check_name(value: str, what: str) -> str:
    if not kinds.is_hostname(value):
        raise OpPrereqError(f"Invalid {what} {value!r}: not a valid host name", ECODE_INVAL)
    return value


def default_ipolicy(disk_templates: list[str]) -> dict[str, Any]:
    """The cluster's default instance policy."""
    return {
        constants.IPOLICY_MINMAX: [copy.deepcopy(constants.ISPECS_MINMAX_DEFAULTS)],
        constants.IPOLICY_STD: dict(constants.ISPECS_STD_DEFAULTS),
        constants.IPOLICY_DTS: list(disk_templates),
        constants.IPOLICY_VCPU_RATIO: constants.IPOLICY_DEFAULT_VCPU_RATIO,
        constants.IPOLICY_SPINDLE_RATIO: constants.IPOLICY_DEFAULT_SPINDLE_RATIO,
    }


def ssh_host_key(path: str) -> str:
    """The base64 part of an SSH public key file, or "" if there is none (blocking)."""
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            fields = f.read().split()
    except OSError:
        return ""
    return fields[1] if len(fields) > 1 else ""


def hv_defaults(hv: str, paths: Paths) -> dict[str, Any]:
    """Ganeti's defaults of hypervisor ``hv``, paths under the node's root directory."""
    filled = dict(constants.HVC_DEFAULTS[hv])
    for name, value in filled.items():
        if value == constants.VNC_PASSWORD_FILE_DEFAULT:
            filled[name] = paths.conf_dir + "/vnc-cluster-password"
    return filled


def _hvparams(opts: InitOptions, paths: Paths) -> dict[str, dict[str, Any]]:
    """Every hypervisor's parameters, as Ganeti's init stores them: the defaults,
    and the ``-H`` values of the enabled ones."""
    for hv in opts.hvparams:
        if hv not in opts.enabled_hypervisors:
            raise OpPrereqError(f"-H {hv}: hypervisor is not in --enabled-hypervisors",
                                ECODE_INVAL)
    result = {hv: hv_defaults(hv, paths) for hv in sorted(constants.HVC_DEFAULTS)}
    for hv in opts.enabled_hypervisors:
        defaults = constants.HVC_DEFAULTS[hv]
        result[hv].update(params.check_params(opts.hvparams.get(hv, {}), defaults,
                                              f"-H {hv}"))
    return result


def build_config(opts: InitOptions, paths: Paths, now: float | None = None) -> ConfigData:
    """Validate ``opts`` and build the initial config; touches nothing on disk."""
    now = time.time() if now is None else now
    name = _check_name(opts.cluster_name, "cluster name")
    node_name = _check_name(paths.hostname, "node name")
    primary_ip = _check_ip(opts.primary_ip or _resolve(node_name, "node name", "--primary-ip"),
                           "primary IP")
    master_ip = _check_ip(opts.master_ip or _resolve(name, "cluster name", "--master-ip"),
                          "master IP")
    secondary_ip = _check_ip(opts.secondary_ip, "secondary IP") if opts.secondary_ip else None
    family = ipaddress.ip_address(primary_ip).version
    netmask = opts.master_netmask if opts.master_netmask is not None else (
        32 if family == 4 else 128)
    if not 0 < netmask <= (32 if family == 4 else 128):
        raise OpPrereqError(f"Invalid --master-netmask {netmask}", ECODE_INVAL)
    if not opts.enabled_hypervisors:
        raise OpPrereqError("--enabled-hypervisors must name at least one hypervisor",
                            ECODE_INVAL)
    for hv in opts.enabled_hypervisors:
        if hv not in constants.ENABLED_HYPERVISOR_CHOICES:
            known = ", ".join(sorted(constants.ENABLED_HYPERVISOR_CHOICES))
            raise OpPrereqError(f"Hypervisor {hv!r} is not supported (choose from {known})",
                                ECODE_INVAL)
    if len(set(opts.enabled_hypervisors)) != len(opts.enabled_hypervisors):
        raise OpPrereqError("--enabled-hypervisors lists a hypervisor twice", ECODE_INVAL)
    for dt in opts.enabled_disk_templates:
        if dt not in constants.DISK_TEMPLATES:
            known = ", ".join(sorted(constants.DISK_TEMPLATES))
            raise OpPrereqError(f"Disk template {dt!r} is not known (choose from {known})",
                                ECODE_INVAL)
    if not opts.enabled_disk_templates:
        raise OpPrereqError("--enabled-disk-templates must name at least one template",
                            ECODE_INVAL)
    if opts.candidate_pool_size < 1:
        raise OpPrereqError("--candidate-pool-size must be at least 1", ECODE_INVAL)
    if not _MAC_PREFIX_RE.fullmatch(opts.mac_prefix):
        raise OpPrereqError(f"Invalid --mac-prefix {opts.mac_prefix!r}: use three "
                            "lower-case hex octets such as aa:00:00", ECODE_INVAL)
    if not opts.master_netdev or "/" in opts.master_netdev:
        raise OpPrereqError(f"Invalid --master-netdev {opts.master_netdev!r}", ECODE_INVAL)
    for what, path in (("--file-storage-dir", opts.file_storage_dir),
                       ("--shared-file-storage-dir", opts.shared_file_storage_dir),
                       ("--gluster-storage-dir", opts.gluster_storage_dir)):
        if path and not os.path.isabs(path):
            raise OpPrereqError(f"{what} must be an absolute path, not {path!r}", ECODE_INVAL)
    pool = uidpool.parse(opts.uid_pool)
    uidpool.check(pool)
    hvparams = _hvparams(opts, paths)
    beparams: dict[str, Any] = dict(constants.BEC_DEFAULTS)
    beparams.update(params.check_params(opts.beparams, constants.BEC_DEFAULTS, "-B", BE_SIZES))
    if beparams[constants.BE_MINMEM] > beparams[constants.BE_MAXMEM]:
        raise OpPrereqError("-B: minmem is greater than maxmem", ECODE_INVAL)
    nicparams = dict(constants.NICC_DEFAULTS)
    nicparams.update(params.check_params(opts.nicparams, constants.NICC_DEFAULTS, "-N"))
    if nicparams[constants.NIC_MODE] not in constants.NIC_VALID_MODES:
        raise OpPrereqError(f"-N: invalid NIC mode {nicparams[constants.NIC_MODE]!r}",
                            ECODE_INVAL)
    ndparams = dict(constants.NDC_DEFAULTS)
    ndparams.update(params.check_params(opts.ndparams, constants.NDC_DEFAULTS, "--node-parameters"))
    if not re.fullmatch(r"[a-z_][a-z0-9_.-]{0,31}", opts.rapi_user):
        raise OpPrereqError(f"Invalid RAPI user name {opts.rapi_user!r}", ECODE_INVAL)

    group_uuid, node_uuid = str(uuidlib.uuid4()), str(uuidlib.uuid4())
    diskparams = copy.deepcopy(constants.DISK_DT_DEFAULTS)
    if opts.vg_name:  # Ganeti: drbd's metadata volumes go to the init-time group
        diskparams[constants.DT_DRBD8]["metavg"] = opts.vg_name
    cluster = Cluster(
        uuid=str(uuidlib.uuid4()), cluster_name=name, master_node=node_uuid,
        master_ip=master_ip, master_netdev=opts.master_netdev, master_netmask=netmask,
        mac_prefix=opts.mac_prefix, volume_group_name=opts.vg_name,
        highest_used_port=constants.FIRST_DRBD_PORT - 1,
        drbd_usermode_helper=opts.drbd_helper,
        file_storage_dir=opts.file_storage_dir,
        shared_file_storage_dir=opts.shared_file_storage_dir,
        gluster_storage_dir=opts.gluster_storage_dir,
        enabled_hypervisors=list(opts.enabled_hypervisors), hvparams=hvparams,
        beparams={"default": beparams}, nicparams={"default": nicparams},
        ndparams=ndparams, diskparams=diskparams,
        ipolicy=default_ipolicy(opts.enabled_disk_templates),
        candidate_pool_size=opts.candidate_pool_size, uid_pool=[list(r) for r in pool],
        default_iallocator=opts.default_iallocator,
        enabled_disk_templates=list(opts.enabled_disk_templates),
        primary_ip_family=socket.AF_INET if family == 4 else socket.AF_INET6,
        maintain_node_health=opts.maintain_node_health,
        modify_etc_hosts=opts.modify_etc_hosts,
        data_collectors={"cpu-avg-load": {"active": True, "interval": 5000000},
                         "diskstats": {"active": True, "interval": 5000000},
                         "drbd": {"active": True, "interval": 5000000},
                         "inst-status-xen": {"active": True, "interval": 5000000},
                         "lv": {"active": True, "interval": 5000000},
                         "xen-cpu-avg-load": {"active": True, "interval": 5000000}},
        ctime=now, mtime=now)
    node = Node(uuid=node_uuid, name=node_name, primary_ip=primary_ip,
                secondary_ip=secondary_ip or primary_ip, master_candidate=True,
                group=group_uuid, ctime=now, mtime=now)
    group = NodeGroup(uuid=group_uuid, name=constants.DEFAULT_NODEGROUP_NAME,
                      members=[node_uuid], ctime=now, mtime=now)
    cfg = ConfigData(version=constants.CONFIG_VERSION, cluster=cluster,
                     nodes={node_uuid: node}, nodegroups={group_uuid: group},
                     ctime=now, mtime=now)
    problems = configmod.verify(cfg)
    if problems:  # pragma: no cover - build_config only makes valid configs
        raise OpPrereqError("; ".join(problems), ECODE_INVAL)
    return cfg


def _dirs(paths: Paths) -> list[tuple[str, int]]:
    return [
        (paths.data_dir, 0o755), (paths.rapi_users_dir, 0o750), (paths.queue_dir, 0o700),
        (paths.queue_archive_dir, 0o700), (paths.run_dir, 0o775),
        (paths.socket_dir, 0o750), (paths.log_dir, 0o750),
    ]


def check_not_initialised(paths: Paths) -> None:
    """Refuse to initialise a node that already holds cluster state."""
    if ssconf.is_initialised(paths):
        raise OpPrereqError(
            f"This node ({paths.hostname}) already belongs to a cluster ({paths.config_file} "
            "or its ssconf files exist); destroy that cluster first", ECODE_ENVIRON)


def initialise(paths: Paths, opts: InitOptions, durable: bool = True) -> InitResult:
    """Create a one-node cluster on this node (blocking); all or nothing."""
    check_not_initialised(paths)
    cfg = build_config(opts, paths)
    password = secrets.token_urlsafe(15)
    created_dirs = [d for d, _ in _dirs(paths) if not os.path.exists(d)]
    old_modes = {d: os.stat(d).st_mode & 0o7777 for d, _ in _dirs(paths) if os.path.isdir(d)}
    written: list[str] = []

    def put(path: str, data: bytes | str, mode: int) -> None:
        # Recorded only once written: a failed write left the old file (if any) alone.
        fileutil.atomic_write(path, data, mode=mode, durable=durable)
        written.append(path)

    try:
        fileutil.ensure_dirs(_dirs(paths))
        # As Ganeti's init: the file storage directories of enabled templates exist
        # (in a virtual cluster only those under the node's root are created)
        for template, sdir in ((constants.DT_FILE, cfg.cluster.file_storage_dir),
                               (constants.DT_SHARED_FILE, cfg.cluster.shared_file_storage_dir)):
            if (template in cfg.cluster.enabled_disk_templates and sdir
                    and (not paths.root or sdir.startswith(paths.root + "/"))
                    and not os.path.exists(sdir)):
                os.makedirs(sdir, 0o750)
        put(paths.server_pem, crypto.generate_self_signed(cfg.cluster.cluster_name), 0o440)
        put(paths.rapi_pem, crypto.generate_self_signed(cfg.cluster.cluster_name), 0o440)
        put(paths.hmac_key, fileutil.generate_secret() + "\n", 0o400)
        put(paths.cluster_domain_secret, fileutil.generate_secret() + "\n", 0o400)
        ha1 = crypto.rapi_ha1(opts.rapi_user, password)
        put(paths.rapi_users,
            "# RAPI users: <name> <password> [read|write]; see ganeti-rapi(8)\n"
            f"{opts.rapi_user} {{HA1}}{ha1} write\n", 0o640)
        put(paths.queue_serial, "0\n", 0o640)
        put(paths.queue_version, f"{constants.JOB_QUEUE_VERSION}\n", 0o640)
        with open(paths.server_pem, "rb") as f:
            digest = crypto.certificate_digest(f.read())
        cfg.cluster.candidate_certs = {cfg.cluster.master_node: digest}
        # As Ganeti's init: the host's SSH keys, "" where the host has none.
        cfg.cluster.rsahostkeypub = ssh_host_key(constants.SSH_HOST_RSA_PUB)
        cfg.cluster.dsahostkeypub = ssh_host_key(constants.SSH_HOST_DSA_PUB)
        for key, value in ssconf.compute(cfg).items():
            put(paths.ssconf_file(key), ssconf.file_content(value), ssconf.FILE_MODE)
        # config.data last: its presence marks the node as initialised.
        put(paths.config_file, configmod.dump(cfg), 0o640)
    except BaseException:
        for path in written:
            fileutil.remove_file(path)
        for d in reversed(created_dirs):
            shutil.rmtree(d, ignore_errors=True)
        for d, mode in old_modes.items():
            os.chmod(d, mode)
        raise
    return InitResult(config=cfg, rapi_user=opts.rapi_user, rapi_password=password)


def destroy(paths: Paths) -> list[str]:
    """Remove the cluster state of this node (blocking); returns what was removed."""
    removed = []
    for path in [paths.config_file, paths.server_pem, paths.rapi_pem, paths.hmac_key,
                 paths.cluster_domain_secret, paths.rapi_users, paths.watcher_pause_file]:
        if os.path.exists(path):
            os.unlink(path)
            removed.append(path)
    for name in sorted(os.listdir(paths.data_dir)) if os.path.isdir(paths.data_dir) else []:
        if name.startswith("ssconf_"):
            os.unlink(os.path.join(paths.data_dir, name))
            removed.append(os.path.join(paths.data_dir, name))
    for directory in (paths.queue_dir, paths.rapi_users_dir):
        if os.path.isdir(directory):
            shutil.rmtree(directory)
            removed.append(directory)
    return removed

"""Simple-store files (``ssconf_*``): small, per-node copies of config facts.

Every node holds them so that tools and daemons on any node can find the
master and the candidates without the full config.  The names and line
formats are those real Ganeti writes and reads.
"""

from __future__ import annotations

import os

from ganeti.core import constants, uidpool
from ganeti.core.errors import ConfigurationError
from ganeti.core.objects import ConfigData
from ganeti.core.paths import Paths

SS_HVPARAMS_PREFIX = "hvparams_"


def _lines(items: list[str]) -> str:
    return "\n".join(items)


def compute(cfg: ConfigData) -> dict[str, str]:
    """All ssconf values for a config, keyed without the ``ssconf_`` prefix."""
    cl = cfg.cluster
    nodes = sorted(cfg.nodes.values(), key=lambda n: n.name)
    mcs = [n for n in nodes if n.master_candidate]
    master = cfg.nodes[cl.master_node]
    values: dict[str, str] = {
        "cluster_name": cl.cluster_name,
        "cluster_tags": _lines(sorted(cl.tags)),
        "file_storage_dir": cl.file_storage_dir,
        "shared_file_storage_dir": cl.shared_file_storage_dir,
        "gluster_storage_dir": cl.gluster_storage_dir,
        "master_candidates": _lines([n.name for n in mcs]),
        "master_candidates_ips": _lines([n.primary_ip for n in mcs]),
        "master_candidates_certs": _lines(
            [f"{uuid}={digest}" for uuid, digest in sorted(cl.candidate_certs.items())]),
        "master_ip": cl.master_ip,
        "master_netdev": cl.master_netdev,
        "master_netmask": str(cl.master_netmask),
        "master_node": master.name,
        "node_list": _lines([n.name for n in nodes]),
        "node_primary_ips": _lines([f"{n.name} {n.primary_ip}" for n in nodes]),
        "node_secondary_ips": _lines([f"{n.name} {n.secondary_ip or n.primary_ip}"
                                      for n in nodes]),
        "node_vm_capable": _lines([f"{n.name}={n.vm_capable}" for n in nodes]),
        "offline_nodes": _lines([n.name for n in nodes if n.offline]),
        "online_nodes": _lines([n.name for n in nodes if not n.offline]),
        "primary_ip_family": str(cl.primary_ip_family),
        "instance_list": _lines(sorted(i.name for i in cfg.instances.values())),
        "release_version": constants.RELEASE_VERSION,
        "hypervisor_list": _lines(cl.enabled_hypervisors),
        "maintain_node_health": str(cl.maintain_node_health),
        "uid_pool": uidpool.format_pool(cl.uid_pool, separator="\n"),
        "nodegroups": _lines([f"{g.uuid} {g.name}" for g in
                              sorted(cfg.nodegroups.values(), key=lambda g: g.name)]),
        "networks": _lines([f"{n.uuid} {n.name}" for n in
                            sorted(cfg.networks.values(), key=lambda n: n.name)]),
        "enabled_user_shutdown": str(cl.enabled_user_shutdown),
        "ssh_ports": _lines([f"{n.name}={n.ndparams.get(constants.ND_SSH_PORT, cl.ndparams.get(constants.ND_SSH_PORT, 22))}"  # noqa: E501
                             for n in nodes]),
    }
    for hv in constants.HYPER_TYPES:
        params = cl.hvparams.get(hv, {})
        values[SS_HVPARAMS_PREFIX + hv] = _lines([f"{k}={v}" for k, v in sorted(params.items())])
    return values


FILE_MODE = 0o444


def file_content(value: str) -> str:
    """What an ssconf file holds: the value and a final newline, or nothing if empty."""
    return value + "\n" if value else ""


def read(paths: Paths, key: str) -> str:
    """One ssconf value, without its trailing newline."""
    path = paths.ssconf_file(key)
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().rstrip("\n")
    except FileNotFoundError:
        raise ConfigurationError(
            f"{path} is missing: this node is not part of a cluster "
            "(or the cluster was not initialised)") from None


def node_primary_ip(paths: Paths) -> str | None:
    """This node's primary IP from ``ssconf_node_primary_ips``, if the file names it."""
    try:
        with open(paths.ssconf_file("node_primary_ips"), encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) == 2 and fields[0] == paths.hostname:
            return fields[1]
    return None


def is_initialised(paths: Paths) -> bool:
    """Whether this node holds cluster state (config or ssconf)."""
    return os.path.exists(paths.config_file) or os.path.exists(paths.ssconf_file("master_node"))

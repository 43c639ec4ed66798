"""LUXI query methods answered from the committed config."""

from __future__ import annotations

import os
import platform
import struct
from collections.abc import Callable
from typing import Any

from twisted.internet.interfaces import IReactorTime

from ganeti import version
from ganeti.core import constants
from ganeti.core.objects import ConfigData
from ganeti.core.params_merge import ordered_ipolicy
from ganeti.core.paths import Paths

ConfigSource = Callable[[], ConfigData]


def luxid_time(t: float) -> float:
    """A timestamp as Ganeti's luxid answers it.

    luxid reads config.data's double into a picosecond clock and back, which
    sometimes moves it by one ulp; clients print what they get, so we do the same.
    """
    seconds, picoseconds = divmod(round(t * 1e12), 10**12)
    return seconds + picoseconds / 1e12


# Computed once: platform.architecture() runs file(1) in a subprocess, which must
# never happen on the reactor thread.  Ganeti's luxid reports e.g. ["64bits", "x86_64"].
ARCHITECTURE = [f"{struct.calcsize('P') * 8}bits", platform.machine()]


def cluster_info(cfg: ConfigData) -> dict[str, Any]:
    """The QueryClusterInfo answer (reference 1.7) for a config."""
    cl = cfg.cluster
    collectors = cl.data_collectors
    return {
        "software_version": constants.RELEASE_VERSION,
        "protocol_version": constants.PROTOCOL_VERSION,
        "config_version": constants.CONFIG_VERSION,
        "os_api_version": constants.OS_API_VERSION,
        "export_version": constants.EXPORT_VERSION,
        "vcs_version": f"(ganeti-twisted) version {version.PACKAGE_VERSION}",
        "architecture": list(ARCHITECTURE),
        "name": cl.cluster_name,
        "master": cfg.master.name,
        "default_hypervisor": cl.enabled_hypervisors[0] if cl.enabled_hypervisors else None,
        "enabled_hypervisors": list(cl.enabled_hypervisors),
        # every hypervisor's, as Ganeti's (its init stores them all; a config made
        # before ours did gets the defaults of those it lacks)
        "hvparams": {**{hv: dict(values) for hv, values in constants.HVC_DEFAULTS.items()},
                     **cl.hvparams},
        "os_hvp": cl.os_hvp,
        "beparams": cl.beparams,
        "osparams": cl.osparams,
        "ipolicy": ordered_ipolicy(cl.ipolicy),  # Ganeti's key order
        "nicparams": cl.nicparams,
        "ndparams": cl.ndparams,
        "diskparams": cl.diskparams,
        "candidate_pool_size": cl.candidate_pool_size,
        "max_running_jobs": cl.max_running_jobs,
        "max_tracked_jobs": cl.max_tracked_jobs,
        "mac_prefix": cl.mac_prefix,
        "master_netdev": cl.master_netdev,
        "master_netmask": cl.master_netmask,
        "use_external_mip_script": cl.use_external_mip_script,
        "volume_group_name": cl.volume_group_name,
        "drbd_usermode_helper": cl.drbd_usermode_helper,
        "file_storage_dir": cl.file_storage_dir,
        "shared_file_storage_dir": cl.shared_file_storage_dir,
        "gluster_storage_dir": cl.gluster_storage_dir,
        "maintain_node_health": cl.maintain_node_health,
        "ctime": luxid_time(cl.ctime),
        "mtime": luxid_time(cl.mtime),
        "uuid": cl.uuid,
        "tags": sorted(cl.tags),
        "uid_pool": cl.uid_pool,
        "default_iallocator": cl.default_iallocator,
        "default_iallocator_params": cl.default_iallocator_params,
        "reserved_lvs": cl.reserved_lvs,
        "primary_ip_version": 6 if cl.primary_ip_family == 10 else 4,
        "prealloc_wipe_disks": cl.prealloc_wipe_disks,
        "hidden_os": cl.hidden_os,
        "blacklisted_os": cl.blacklisted_os,
        "enabled_disk_templates": cl.enabled_disk_templates,
        "install_image": cl.install_image,
        "instance_communication_network": cl.instance_communication_network,
        "zeroing_image": cl.zeroing_image,
        "compression_tools": cl.compression_tools,
        "enabled_user_shutdown": cl.enabled_user_shutdown,
        "enabled_data_collectors": {k: bool(v.get("active", True))
                                    for k, v in collectors.items()},
        "data_collector_interval": {k: int(v.get("interval", 0))
                                    for k, v in collectors.items()},
        "modify_ssh_setup": cl.modify_ssh_setup,
        "ssh_key_type": cl.ssh_key_type,
        "ssh_key_bits": cl.ssh_key_bits,
    }


class ClusterQueries:
    """QueryClusterInfo, QueryConfigValues and QueryTags."""

    def __init__(self, config: ConfigSource, paths: Paths, clock: IReactorTime) -> None:
        self._config = config
        self._paths = paths
        self._clock = clock

    def implementations(self) -> dict[str, Callable[..., Any]]:
        """LUXI method name -> implementation."""
        return {
            "QueryClusterInfo": self.query_cluster_info,
            "QueryConfigValues": self.query_config_values,
            "QueryTags": self.query_tags,
        }

    def query_cluster_info(self) -> dict[str, Any]:
        """Cluster parameters and versions."""
        return cluster_info(self._config())

    def _watcher_pause(self) -> float | None:
        # A small local file; reading it costs less than a context switch.
        try:
            with open(self._paths.watcher_pause_file, encoding="ascii") as f:
                until = float(f.read().strip())
        except (OSError, ValueError):
            return None
        return until if until > self._clock.seconds() else None

    def query_config_values(self, fields: list[str]) -> list[Any]:
        """Values of the named configuration fields; unknown names give null."""
        cfg = self._config()
        cl = cfg.cluster
        getters: dict[str, Callable[[], Any]] = {
            "cluster_name": lambda: cl.cluster_name,
            "master_node": lambda: cfg.master.name,
            "drain_flag": lambda: os.path.exists(self._paths.queue_drain),
            "watcher_pause": self._watcher_pause,
            "modify_ssh_setup": lambda: cl.modify_ssh_setup,
            "ssh_key_type": lambda: cl.ssh_key_type,
            "ssh_key_bits": lambda: cl.ssh_key_bits,
        }
        return [getters[f]() if f in getters else None for f in fields]

    def query_tags(self, kind: str, name: str | None) -> list[str]:
        """Tags of one object."""
        return sorted(self._config().tagged_object(kind, name).tags)

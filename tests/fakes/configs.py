"""Config objects for tests, built the same way cluster init builds them."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid as uuidmod
from typing import Any

from ganeti.core import bootstrap, constants
from ganeti.core.objects import ConfigData
from ganeti.core.paths import Paths

DATA_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")


def reference_config_dict() -> dict:
    """A config in the shape of Ganeti 3.1's config.data (with instances, disks, ...)."""
    with open(os.path.join(DATA_DIR, "config-3.1-shape.json"), encoding="utf-8") as f:
        return json.load(f)


def init_options(**overrides) -> bootstrap.InitOptions:
    """Options for a small cluster with fixed addresses (no DNS needed)."""
    values = dict(cluster_name="cluster.test", primary_ip="127.0.1.1",
                  master_ip="127.0.1.254", enabled_hypervisors=[constants.HT_FAKE],
                  enabled_disk_templates=[constants.DT_DISKLESS, constants.DT_FILE])
    values.update(overrides)
    return bootstrap.InitOptions(**values)


def scratch_dir(case: Any) -> str:
    """A fresh absolute directory under the system's temporary directory, removed when
    the test ends.

    trial's ``mktemp()`` is relative to the working directory: under pytest that is a
    scratch directory (tests/conftest.py), but a test run any other way (as a script, a
    class defined in ``__main__``) wrote ``__main__/<Class>/<test>/`` into the checkout."""
    path = tempfile.mkdtemp(prefix="ganeti-test-")
    case.addCleanup(shutil.rmtree, path, True)
    return path


def node_paths(tmpdir: str, name: str = "node1.test") -> Paths:
    """Paths of a virtual node under ``tmpdir``."""
    root = os.path.join(os.path.abspath(tmpdir), name)
    os.makedirs(root, exist_ok=True)
    return Paths.for_node(root, name)


def small_config(**overrides) -> ConfigData:
    """A valid one-node config (nothing written to disk)."""
    paths = Paths.for_node("/nonexistent/node1.test", "node1.test")
    return bootstrap.build_config(init_options(**overrides), paths, now=1700000000.0)


DISK_KINDS = ("plain", "drbd", "file", "diskless")


def _uuid(kind: int, i: int) -> str:
    return str(uuidmod.UUID(int=(kind << 96) | i, version=4))


def grow(d: dict, instances: int, nodes: int) -> dict:
    """Add offline nodes and instances (in Ganeti 3.0's format) to a config dict."""
    group = next(iter(d["nodegroups"]))
    template = d["nodes"][d["cluster"]["master_node"]]
    node_ids = list(d["nodes"])
    for i in range(max(0, nodes - len(node_ids))):
        u = _uuid(1, i)
        d["nodes"][u] = dict(template, uuid=u, name=f"extra{i}.vcluster.test",
                             primary_ip=f"127.9.{i // 250}.{i % 250 + 1}", secondary_ip=None,
                             master_candidate=False, offline=True, tags=[])
        d["nodegroups"][group]["members"].append(u)
        node_ids.append(u)
    port = 11000
    minors: dict[str, int] = {}
    for i in range(instances):
        iu = _uuid(2, i)
        primary = node_ids[i % len(node_ids)]
        secondary = node_ids[(i + 1) % len(node_ids)]
        kind = DISK_KINDS[i % len(DISK_KINDS)]
        disks = []
        if kind != "diskless":
            du = _uuid(3, i)
            disk = {"uuid": du, "name": "disk0", "iv_name": "disk/0", "size": 10240,
                    "mode": "rw", "params": {}, "children": [], "nodes": [primary],
                    "serial_no": 1, "ctime": 1.0, "mtime": 1.0, "dev_type": kind}
            if kind == "plain":
                disk["logical_id"] = ["xenvg", f"{iu}.disk0"]
            elif kind == "file":
                disk["logical_id"] = ["loop", f"/srv/ganeti/file-storage/{iu}/disk0"]
            else:
                port += 1
                ma, mb = minors.get(primary, 0), minors.get(secondary, 0)
                minors[primary], minors[secondary] = ma + 1, mb + 1
                disk["nodes"] = [primary, secondary]
                disk["logical_id"] = [primary, secondary, port, ma, mb, f"secret{i}"]
                disk["children"] = [
                    {"dev_type": "plain", "logical_id": ["xenvg", f"{iu}.disk0_data"],
                     "size": 10240, "mode": "rw", "params": {}, "children": [],
                     "nodes": [primary, secondary], "iv_name": "", "serial_no": 1,
                     "ctime": 1.0, "mtime": 1.0},
                    {"dev_type": "plain", "logical_id": ["xenvg", f"{iu}.disk0_meta"],
                     "size": 128, "mode": "rw", "params": {}, "children": [],
                     "nodes": [primary, secondary], "iv_name": "", "serial_no": 1,
                     "ctime": 1.0, "mtime": 1.0}]
            d["disks"][du] = disk
            disks.append(du)
        port += 1
        d["instances"][iu] = {
            "uuid": iu, "name": f"inst{i}.vcluster.test", "primary_node": primary,
            "secondary_nodes": [secondary] if kind == "drbd" else [],
            "os": "debootstrap+default", "hypervisor": "fake", "hvparams": {},
            "beparams": {"maxmem": 1024}, "osparams": {}, "osparams_private": {},
            "admin_state": "up", "admin_state_source": "admin",
            "nics": [{"uuid": _uuid(4, i), "mac": "aa:00:" + ":".join(
                f"{(i >> shift) & 255:02x}" for shift in (24, 16, 8, 0)),
                "nicparams": {"mode": "bridged", "link": "br0", "vlan": ""}}],
            "disks": disks, "disk_template": kind, "disks_active": True, "network_port": port,
            "serial_no": 1, "ctime": 1.0, "mtime": 1.0, "tags": []}
    d["cluster"]["highest_used_port"] = max(d["cluster"].get("highest_used_port", 0), port)
    enabled = d["cluster"].setdefault("enabled_disk_templates", [])
    for kind in DISK_KINDS:
        if kind not in enabled:
            enabled.append(kind)
    d["serial_no"] += 1000  # the candidates' copies are older: they get the whole file
    return d

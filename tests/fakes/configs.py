"""Config objects for tests, built the same way cluster init builds them."""

from __future__ import annotations

import json
import os

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


def node_paths(tmpdir: str, name: str = "node1.test") -> Paths:
    """Paths of a virtual node under ``tmpdir``."""
    root = os.path.join(os.path.abspath(tmpdir), name)
    os.makedirs(root, exist_ok=True)
    return Paths.for_node(root, name)


def small_config(**overrides) -> ConfigData:
    """A valid one-node config (nothing written to disk)."""
    paths = Paths.for_node("/nonexistent/node1.test", "node1.test")
    return bootstrap.build_config(init_options(**overrides), paths, now=1700000000.0)

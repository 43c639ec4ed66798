"""Round trip of real Ganeti configs: Debian's ganeti-testsuite samples, upgraded to 3.0.

Debian's ``ganeti-testsuite`` ships ``cluster_config_2.7.json`` ... ``2.16.json``.
Debian's own ``cfgupgrade`` (package ``ganeti-3.0``) converts a copy of each to
the 3.0 format in a temporary directory and then loads it with Ganeti's own
config code and verifies it (it exits non-zero if Ganeti finds a problem).
On the result, our ``load`` → ``dump`` must give the same JSON value and our
``verify`` must report nothing.  Both packages are installed by
``make install-oracle`` (part of ``make test``); without them the tests are
skipped with that reason, as the oracle tests are.
"""

from __future__ import annotations

import gc
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile

import pytest
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import config as configmod
from ganeti.core.errors import ConfigVersionMismatch

SAMPLES_DIR = "/usr/share/ganeti/testsuite/test/data"
CFGUPGRADE = "/usr/lib/ganeti/tools/cfgupgrade"


def _version_key(path: str) -> tuple[int, ...]:
    found = re.search(r"cluster_config_([\d.]+)\.json$", path)
    assert found is not None
    return tuple(int(p) for p in found.group(1).split("."))


def samples() -> list[str]:
    return sorted(glob.glob(os.path.join(SAMPLES_DIR, "cluster_config_*.json")),
                  key=_version_key)


def unavailable() -> str | None:
    """Why the samples cannot be upgraded here (a skip reason), or None."""
    if not samples():
        return (f"Debian's ganeti-testsuite is not installed (no {SAMPLES_DIR}/"
                "cluster_config_*.json); 'make install-oracle' (part of 'make test') installs it")
    if not os.access(CFGUPGRADE, os.X_OK):
        return (f"Debian's cfgupgrade ({CFGUPGRADE}, package ganeti-3.0) is missing; "
                "'make install-oracle' (part of 'make test') installs it")
    return None


def upgrade(sample: str, workdir: str) -> str:
    """Upgrade a copy of ``sample`` to 3.0 with Debian's cfgupgrade; return the new text."""
    data_dir = os.path.join(workdir, "data")
    conf_dir = os.path.join(workdir, "conf")
    os.makedirs(data_dir)
    os.makedirs(conf_dir)
    shutil.copy(sample, os.path.join(data_dir, "config.data"))
    # What cfgupgrade looks for to accept a directory as Ganeti's data dir.
    for name in ("server.pem", "known_hosts"):
        open(os.path.join(data_dir, name), "w").close()
    with open(os.path.join(data_dir, "ssconf_master_node"), "w") as f:
        f.write(socket.gethostname() + "\n")
    result = subprocess.run(
        [CFGUPGRADE, f"--path={data_dir}", f"--confdir={conf_dir}", "--force",
         "--ignore-hostname"], capture_output=True, text=True, timeout=120, check=False)
    if result.returncode != 0:
        raise AssertionError(f"cfgupgrade failed on {sample} ({result.returncode}):\n"
                             f"{result.stdout}{result.stderr}")
    with open(os.path.join(data_dir, "config.data"), encoding="utf-8") as f:
        return f.read()


@pytest.mark.subprocess
class SampleConfigsTest(SynchronousTestCase):
    """Every sample, upgraded by Ganeti's tool, round-trips through our model."""

    skip_reason: str | None = None
    upgraded: dict[str, str] = {}

    @classmethod
    def setUpClass(cls):
        cls.skip_reason = unavailable()
        cls.upgraded = {}
        if cls.skip_reason:
            return
        tmp = tempfile.mkdtemp(prefix="ganeti-samples-")
        try:
            for sample in samples():
                version = ".".join(map(str, _version_key(sample)))
                cls.upgraded[version] = upgrade(sample, os.path.join(tmp, version))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def setUp(self):
        if self.skip_reason:
            self.skipTest(self.skip_reason)

    def test_all_samples_were_upgraded_to_3_0(self):
        self.assertGreaterEqual(len(self.upgraded), 10)  # 2.7 ... 2.16
        for version, text in self.upgraded.items():
            self.assertEqual(json.loads(text)["version"], 3000000, version)

    def test_load_dump_gives_the_same_json(self):
        for version, text in self.upgraded.items():
            cfg = configmod.load(text)  # verifies: refuses any problem
            self.assertEqual(json.loads(configmod.dump(cfg)), json.loads(text),
                             f"sample {version}: dump differs from Ganeti's file")
            again = configmod.load(configmod.dump(cfg))
            self.assertEqual(configmod.dump(again), configmod.dump(cfg))

    def test_verify_reports_nothing(self):
        for version, text in self.upgraded.items():
            cfg = configmod.load(text, check=False)
            self.assertEqual(configmod.verify(cfg), [], f"sample {version}")

    def test_config_objects_form_no_reference_cycles(self):
        # masterd freezes its config out of the cyclic collector's reach
        # (ganeti/master/tap.py): what a load or a clone drops must be freed by
        # reference counting alone.
        text = self.upgraded["2.16"]
        gc.collect()
        enabled = gc.isenabled()
        gc.disable()
        try:
            cfg = configmod.load(text)
            copy = cfg.clone()
            for inst in copy.instances.values():
                inst.clone()
            del cfg, copy, inst
            self.assertEqual(gc.collect(), 0)
        finally:
            if enabled:
                gc.enable()

    def test_samples_hold_the_whole_model(self):
        """The samples exercise instances, drbd children, NICs, networks."""
        text = self.upgraded["2.16"]
        cfg = configmod.load(text)
        kinds = {d.dev_type for d in cfg.disks.values()}
        self.assertTrue({"plain", "drbd"} <= kinds, kinds)
        drbd = next(d for d in cfg.disks.values() if d.dev_type == "drbd")
        self.assertEqual([c.dev_type for c in drbd.children], ["plain", "plain"])
        self.assertEqual(drbd.children[0].uuid, "")  # children carry no uuid
        self.assertTrue(all(nic.mac for i in cfg.instances.values() for nic in i.nics))
        self.assertEqual(len(cfg.networks), 1)
        # group members are not stored, as in Ganeti: derived from the nodes
        for group in cfg.nodegroups.values():
            self.assertEqual(sorted(group.members),
                             sorted(n.uuid for n in cfg.nodes.values() if n.group == group.uuid))
            self.assertNotIn("members", json.loads(configmod.dump(cfg))["nodegroups"][group.uuid])

    def test_a_broken_sample_is_reported(self):
        """The round trip is not vacuous: a damaged sample fails verify with a path."""
        data = json.loads(self.upgraded["2.16"])
        inst = next(iter(data["instances"].values()))
        inst["nics"][0]["mac"] = "not-a-mac"
        problems = configmod.verify(configmod.load(json.dumps(data), check=False))
        self.assertEqual(len(problems), 1)
        self.assertIn(f"instances/{inst['uuid']} ({inst['name']}): nics[0]: mac 'not-a-mac'",
                      problems[0])

    def test_unconverted_samples_are_refused(self):
        for sample in samples():
            with open(sample, encoding="utf-8") as f:
                with self.assertRaises(ConfigVersionMismatch):
                    configmod.load(f.read())

"""config.data: load, verify and dump."""

import copy
import json

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import config as configmod
from ganeti.core import constants
from ganeti.core.errors import ConfigurationError, ConfigVersionMismatch
from tests.fakes.configs import reference_config_dict, small_config


def _normalise(data):
    """JSON-normalised data without null-valued keys (dump omits them, as Ganeti does)."""
    if isinstance(data, dict):
        return {k: _normalise(v) for k, v in data.items() if v is not None}
    if isinstance(data, list):
        return [_normalise(v) for v in data]
    return json.loads(json.dumps(data))


class RoundTripTest(SynchronousTestCase):
    def test_reference_shape_round_trips(self):
        data = reference_config_dict()
        cfg = configmod.load(json.dumps(data))
        self.assertEqual(configmod.verify(cfg), [])
        self.assertEqual(_normalise(json.loads(configmod.dump(cfg))), _normalise(data))
        # and the dump loads back to an equal object
        self.assertEqual(configmod.load(configmod.dump(cfg)), cfg)

    def test_reference_objects_are_typed(self):
        cfg = configmod.load(json.dumps(reference_config_dict()))
        self.assertEqual(cfg.master.name, "node1.example.test")
        inst = cfg.instance_by_name("web1.example.test")
        self.assertEqual(inst.nics[0].mac, "aa:00:00:11:22:33")
        disk = cfg.disks[inst.disks[0]]
        self.assertEqual([c.logical_id[1] for c in disk.children],
                         ["web1.disk0_data", "web1.disk0_meta"])
        self.assertEqual(cfg.node_role(cfg.node_by_name("node2.example.test")),
                         constants.NR_DRAINED)
        self.assertEqual(cfg.node_role(cfg.master), constants.NR_MASTER)
        self.assertEqual(cfg.filters["f0000000-0000-4000-8000-000000000001"].action, "REJECT")

    def test_generated_config_round_trips(self):
        cfg = small_config()
        self.assertEqual(configmod.verify(cfg), [])
        text = configmod.dump(cfg)
        self.assertEqual(configmod.dump(configmod.load(text)), text)

    def test_unknown_keys_are_kept_and_reported(self):
        data = reference_config_dict()
        data["cluster"]["future_knob"] = {"x": 1}
        data["nodes"]["n0000000-0000-4000-8000-000000000002"]["shiny"] = True
        data["instances"]["i0000000-0000-4000-8000-000000000001"]["nics"][0]["queue"] = 4
        cfg = configmod.load(json.dumps(data))
        self.assertEqual(json.loads(configmod.dump(cfg))["cluster"]["future_knob"], {"x": 1})
        self.assertEqual(sorted(configmod.unknown_keys(cfg)), [
            "config/cluster/future_knob",
            "config/instances/i0000000-0000-4000-8000-000000000001/nics/0/queue",
            "config/nodes/n0000000-0000-4000-8000-000000000002/shiny"])

    def test_none_values_are_omitted(self):
        data = json.loads(configmod.dump(small_config()))
        self.assertNotIn("dsahostkeypub", data["cluster"])
        # ... but rsahostkeypub, which Ganeti's daemons require, is always written
        self.assertEqual(data["cluster"]["rsahostkeypub"], "")


class LoadErrorsTest(SynchronousTestCase):
    def test_unknown_version_refused(self):
        data = reference_config_dict()
        data["version"] = 2160000
        with self.assertRaises(ConfigVersionMismatch) as cm:
            configmod.load(json.dumps(data))
        self.assertIn("version 2160000 (Ganeti 2.16.0) is not supported", str(cm.exception))

    def test_missing_version_refused(self):
        data = reference_config_dict()
        del data["version"]
        with self.assertRaises(ConfigurationError):
            configmod.load(json.dumps(data))

    def test_not_json(self):
        with self.assertRaises(ConfigurationError) as cm:
            configmod.load(b"{not json")
        self.assertIn("not valid JSON", str(cm.exception))

    def test_wrong_type_names_the_path(self):
        data = reference_config_dict()
        data["nodes"]["n0000000-0000-4000-8000-000000000002"]["offline"] = "no"
        with self.assertRaises(ConfigurationError) as cm:
            configmod.load(json.dumps(data))
        self.assertIn("nodes/n0000000-0000-4000-8000-000000000002/offline", str(cm.exception))

    def test_missing_required_key(self):
        data = reference_config_dict()
        del data["cluster"]["master_node"]
        with self.assertRaises(ConfigurationError) as cm:
            configmod.load(json.dumps(data))
        self.assertIn("master_node", str(cm.exception))

    def test_bool_is_not_an_int(self):
        data = reference_config_dict()
        data["cluster"]["candidate_pool_size"] = True
        with self.assertRaises(ConfigurationError):
            configmod.load(json.dumps(data))


class VerifyTest(SynchronousTestCase):
    def setUp(self):
        self.data = reference_config_dict()

    def problems(self):
        return configmod.verify(configmod.load(json.dumps(self.data), check=False))

    def test_clean(self):
        self.assertEqual(self.problems(), [])

    def test_unknown_master(self):
        self.data["cluster"]["master_node"] = "nope"
        self.assertTrue(any("master_node 'nope'" in p for p in self.problems()))

    def test_master_must_be_candidate(self):
        self.data["nodes"]["n0000000-0000-4000-8000-000000000001"]["master_candidate"] = False
        self.assertTrue(any("not a master candidate" in p for p in self.problems()))

    def test_key_must_match_uuid(self):
        node = self.data["nodes"].pop("n0000000-0000-4000-8000-000000000002")
        self.data["nodes"]["other"] = node
        self.assertTrue(any("key differs" in p for p in self.problems()))

    def test_duplicate_names(self):
        self.data["nodes"]["n0000000-0000-4000-8000-000000000002"]["name"] = "node1.example.test"
        self.assertTrue(any("used by" in p for p in self.problems()))

    def test_group_membership(self):
        self.data["nodegroups"]["g0000000-0000-4000-8000-000000000001"]["members"].pop()
        self.assertTrue(any("not listed in the members" in p for p in self.problems()))

    def test_flags_exclusive(self):
        self.data["nodes"]["n0000000-0000-4000-8000-000000000002"]["offline"] = True
        self.assertTrue(any("mutually exclusive" in p for p in self.problems()))

    def test_instance_references(self):
        inst = self.data["instances"]["i0000000-0000-4000-8000-000000000001"]
        inst["primary_node"] = "ghost"
        inst["disks"].append("ghost-disk")
        probs = self.problems()
        self.assertTrue(any("primary_node 'ghost'" in p for p in probs))
        self.assertTrue(any("ghost-disk" in p for p in probs))

    def test_bad_ip_and_params(self):
        self.data["nodes"]["n0000000-0000-4000-8000-000000000002"]["primary_ip"] = "300.1.1.1"
        self.data["cluster"]["candidate_pool_size"] = 0
        self.data["cluster"]["enabled_hypervisors"] = ["vmware"]
        self.data["cluster"]["uid_pool"] = [[10, 5]]
        probs = self.problems()
        for needle in ("not an IP address", "candidate_pool_size", "'vmware'", "uid_pool"):
            self.assertTrue(any(needle in p for p in probs), needle)

    def test_load_refuses_inconsistent(self):
        self.data["cluster"]["master_node"] = "nope"
        with self.assertRaises(ConfigurationError) as cm:
            configmod.load(json.dumps(self.data))
        self.assertIn("inconsistent", str(cm.exception))

    def test_verify_does_not_mutate(self):
        cfg = configmod.load(json.dumps(self.data))
        before = copy.deepcopy(cfg)
        configmod.verify(cfg)
        self.assertEqual(cfg, before)

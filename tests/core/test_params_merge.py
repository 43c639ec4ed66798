"""How parameter changes merge (GetUpdatedParams, GetUpdatedIPolicy) and the
cluster change computed from OP_CLUSTER_SET_PARAMS."""

import copy
import os

from hypothesis import given
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import bootstrap
from ganeti.core.errors import OpPrereqError, TypeEnforcementError
from ganeti.core.opcodes import table
from ganeti.core.params_cluster import compute_cluster_change, find_iallocator
from ganeti.core.params_merge import (
    IPOLICY_KEY_ORDER,
    fill_ipolicy,
    get_updated_ipolicy,
    get_updated_params,
    ordered_ipolicy,
    verify_dict_options,
)
from tests.master.test_jobqueue import small_config

SPEC = {"memory-size": 128, "cpu-count": 1, "disk-count": 1, "disk-size": 1024,
        "nic-count": 1, "spindle-use": 1}


def cluster_policy():
    return bootstrap.default_ipolicy(["file", "diskless"])


class UpdatedParamsTest(SynchronousTestCase):
    def test_keys_merge_and_default_removes(self):
        old = {"a": 1, "b": 2}
        self.assertEqual(get_updated_params(old, {"b": 3, "c": 4}), {"a": 1, "b": 3, "c": 4})
        self.assertEqual(get_updated_params(old, {"a": "default", "x": "default"}), {"b": 2})
        self.assertEqual(get_updated_params(old, {"a": "default"}, use_default=False),
                         {"a": "default", "b": 2})
        self.assertEqual(get_updated_params(old, {"a": None}, use_none=True), {"b": 2})
        self.assertEqual(old, {"a": 1, "b": 2})  # never changed in place

    @given(st.dictionaries(st.sampled_from("abcd"), st.integers()),
           st.dictionaries(st.sampled_from("abcd"), st.integers() | st.just("default")))
    def test_only_named_keys_change(self, old, change):
        new = get_updated_params(old, change)
        for key in set(old) | set(change):
            if key not in change:
                self.assertEqual(new[key], old[key])
            elif change[key] == "default":
                self.assertNotIn(key, new)
            else:
                self.assertEqual(new[key], change[key])

    def test_verify_dict_options_names_paths(self):
        err = self.assertRaises(OpPrereqError, verify_dict_options,
                                {"drbd": {"pool": 1}, "floppy": {}},
                                {"drbd": {"resync-rate": 1}})
        self.assertEqual(err.args, ("Provided option keys not supported: drbd/pool, floppy",
                                    "wrong_input"))


class UpdatedIPolicyTest(SynchronousTestCase):
    def test_std_merges_and_is_coerced(self):
        new = get_updated_ipolicy(cluster_policy(), {"std": {"memory-size": "256"}})
        self.assertEqual(new["std"], {**SPEC, "memory-size": 256})

    def test_bounds_and_templates_are_replaced(self):
        bounds = [{"min": dict(SPEC), "max": {**SPEC, "memory-size": "4096"}}]
        new = get_updated_ipolicy(cluster_policy(), {"minmax": bounds,
                                                     "disk-templates": ["file"]})
        self.assertEqual(new["minmax"], [{"min": SPEC, "max": {**SPEC, "memory-size": 4096}}])
        self.assertEqual(new["disk-templates"], ["file"])
        self.assertEqual(new["vcpu-ratio"], 4.0)

    def test_ratios_are_floats(self):
        new = get_updated_ipolicy(cluster_policy(), {"vcpu-ratio": "2", "spindle-ratio": 8})
        self.assertEqual((new["vcpu-ratio"], new["spindle-ratio"]), (2.0, 8.0))
        self.assertIs(type(new["spindle-ratio"]), float)

    def test_cluster_refusals(self):
        cases = [({"bogus": 1}, "Invalid key in new ipolicy: bogus"),
                 ({"vcpu-ratio": "default"},
                  "Can't unset ipolicy attribute 'vcpu-ratio' on the cluster'"),
                 ({"minmax": []}, "Can't unset ipolicy attribute 'minmax' on the cluster'"),
                 ({"spindle-ratio": "x"}, "Invalid value for attribute 'spindle-ratio': 'x', "
                                          "error: could not convert string to float: 'x'"),
                 ({"std": {"memory-size": 1 << 30}},
                  "Invalid instance policy: Invalid std specifications"),
                 ({"minmax": [{"min": {**SPEC, "cpu-count": 9}, "max": SPEC}]},
                  "Invalid instance policy: Invalid specification of min/max values for "
                  "cpu-count: 9/1"),
                 ({"minmax": [{"min": SPEC}]},
                  "Invalid instance policy: Missing instance specification: max"),
                 ({"disk-templates": ["floppy"]},
                  "Invalid instance policy: Invalid disk template(s) floppy")]
        for change, message in cases:
            err = self.assertRaises(OpPrereqError, get_updated_ipolicy, cluster_policy(),
                                    change)
            self.assertEqual(err.args, (message, "wrong_input"), change)
        self.assertRaises(TypeEnforcementError, get_updated_ipolicy, cluster_policy(),
                          {"std": {"cpu-count": "two"}})

    def test_group_policy_drops_keys(self):
        group = {"vcpu-ratio": 2.0, "disk-templates": ["file"]}
        self.assertEqual(get_updated_ipolicy(group, {"vcpu-ratio": "default",
                                                     "disk-templates": ["default"],
                                                     "minmax": "default"}, True), {})
        err = self.assertRaises(OpPrereqError, get_updated_ipolicy, group,
                                {"std": {"cpu-count": 1}}, True)
        self.assertEqual(err.args[0], "std cannot appear in group instance specs")

    def test_fill_and_order(self):
        filled = fill_ipolicy(cluster_policy(), {"vcpu-ratio": 1.0})
        self.assertEqual(filled["vcpu-ratio"], 1.0)
        self.assertEqual(filled["std"], SPEC)
        ordered = ordered_ipolicy(dict(sorted(filled.items())))
        self.assertEqual(tuple(ordered), IPOLICY_KEY_ORDER)
        self.assertEqual(list(ordered["minmax"][0]), ["min", "max"])
        self.assertEqual(list(ordered["std"]), ["memory-size", "disk-size", "disk-count",
                                                "cpu-count", "nic-count", "spindle-use"])


def _op(**params):
    return table.OP_CLUSTER_SET_PARAMS.validate({"OP_ID": "OP_CLUSTER_SET_PARAMS", **params})


class ClusterChangeTest(SynchronousTestCase):
    def setUp(self):
        self.cfg = small_config()
        self.before = copy.deepcopy(self.cfg.cluster)

    def test_uid_options_apply_in_ganeti_order(self):
        self.cfg.cluster.uid_pool = [[1000, 1000]]
        change = compute_cluster_change(self.cfg, _op(add_uids=[[3000, 3000]],
                                                      remove_uids=[[1000, 1000]]))
        self.assertEqual(change.cluster.uid_pool, [[3000, 3000]])
        change = compute_cluster_change(self.cfg, _op(uid_pool=[[5, 6]],
                                                      add_uids=[[3000, 3000]]))
        self.assertEqual(change.cluster.uid_pool, [[5, 6]])  # set last: it wins
        self.assertEqual(self.cfg.cluster.uid_pool, [[1000, 1000]])  # the input stays

    def test_nested_dicts_keep_other_keys(self):
        change = compute_cluster_change(self.cfg, _op(
            hvparams={"fake": {"migration_mode": "non-live"}},
            beparams={"vcpus": "4"}, nicparams={"link": "br5"},
            diskparams={"plain": {"stripes": "3"}}))
        cl = change.cluster
        self.assertEqual(cl.beparams["default"],
                         {**self.before.beparams["default"], "vcpus": 4})
        self.assertEqual(cl.nicparams["default"],
                         {**self.before.nicparams["default"], "link": "br5"})
        self.assertEqual(cl.diskparams["plain"], {**self.before.diskparams.get("plain", {}),
                                                  "stripes": 3})
        self.assertEqual(cl.hvparams["fake"]["migration_mode"], "non-live")
        self.assertEqual(change.feedback, [])

    def test_errors_leave_the_config_alone(self):
        self.assertRaises(TypeEnforcementError, compute_cluster_change, self.cfg,
                          _op(candidate_pool_size=3, ndparams={"ssh_port": "x"}))
        self.assertEqual(self.cfg.cluster, self.before)


class FindIAllocatorTest(SynchronousTestCase):
    def test_search_path(self):
        base = self.mktemp()
        os.makedirs(os.path.join(base, "two"))
        with open(os.path.join(base, "two", "hail"), "w", encoding="utf-8"):
            pass
        path = (os.path.join(base, "one"), os.path.join(base, "two"))
        find_iallocator("hail", path)  # found
        for name in ("hbal", "../two/hail", "two/hail", ""):
            err = self.assertRaises(OpPrereqError, find_iallocator, name, path)
            self.assertEqual(err.args, (f"Invalid default iallocator script '{name}' "
                                        "specified", "wrong_input"))

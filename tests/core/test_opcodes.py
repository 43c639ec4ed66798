"""The opcode table: validation, defaults, summaries, dependencies, reason trail."""

import copy
import pathlib

from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import opcodes
from ganeti.core.errors import ECODE_INVAL, OpPrereqError
from ganeti.core.opcodes import base, catalog, kinds

# A minimal valid wire form of every declared opcode.
GOOD = {
    "OP_CLUSTER_QUERY": {},
    "OP_CLUSTER_SET_PARAMS": {},
    "OP_QUERY": {"what": "job", "fields": ["id", "status"]},
    "OP_QUERY_FIELDS": {"what": "lock"},
    "OP_TAGS_GET": {"kind": "cluster"},
    "OP_TAGS_SEARCH": {"pattern": "^web"},
    "OP_TAGS_SET": {"kind": "instance", "name": "inst1", "tags": ["a", "b"]},
    "OP_TAGS_DEL": {"kind": "node", "name": "node1", "tags": ["a"]},
    "OP_TEST_DELAY": {"duration": 2.5},
    "OP_TEST_JQUEUE": {"notify_exec": True, "log_messages": ["a", ""]},
    "OP_TEST_OS_PARAMS": {"osparams_secret": {"param1": "secret1"}},
    "OP_TEST_ALLOCATOR": {"direction": "in", "mode": "allocate", "name": "new1",
                          "memory": 128, "disks": [{"size": 1024, "mode": "rw"}]},
    "OP_INSTANCE_MULTI_ALLOC": {"instances": [{"OP_ID": "OP_INSTANCE_CREATE",
                                               "instance_name": "inst1"}]},
    "OP_EXT_STORAGE_DIAGNOSE": {"output_fields": ["name", "node_status"]},
    "OP_CLUSTER_REDIST_CONF": {},
    "OP_CLUSTER_ACTIVATE_MASTER_IP": {},
    "OP_CLUSTER_DEACTIVATE_MASTER_IP": {},
    "OP_CLUSTER_VERIFY": {"verbose": True},
    "OP_CLUSTER_VERIFY_CONFIG": {},
    "OP_CLUSTER_VERIFY_GROUP": {"group_name": "default"},
    "OP_CLUSTER_VERIFY_DISKS": {},
    "OP_GROUP_VERIFY_DISKS": {"group_name": "default"},
    "OP_NODE_ADD": {"node_name": "node2.example.com", "primary_ip": "192.0.2.2"},
    "OP_NODE_REMOVE": {"node_name": "node2.example.com"},
    "OP_NODE_SET_PARAMS": {"node_name": "node2", "offline": True, "auto_promote": True},
    "OP_OOB_COMMAND": {"command": "health", "node_names": ["node1"]},
    "OP_GROUP_ADD": {"group_name": "rack2", "alloc_policy": "last_resort"},
    "OP_GROUP_REMOVE": {"group_name": "rack2"},
    "OP_GROUP_RENAME": {"group_name": "rack2", "new_name": "rack3"},
    "OP_GROUP_SET_PARAMS": {"group_name": "rack2", "ndparams": {"spindle_count": 2}},
    "OP_GROUP_ASSIGN_NODES": {"group_name": "rack2", "nodes": ["node2"]},
    "OP_OS_DIAGNOSE": {"output_fields": ["name", "variants"]},
    "OP_NETWORK_ADD": {"network_name": "net1", "network": "10.1.0.0/24"},
    "OP_NETWORK_REMOVE": {"network_name": "net1"},
    "OP_NETWORK_SET_PARAMS": {"network_name": "net1", "gateway": "none"},
    "OP_NETWORK_CONNECT": {"group_name": "default", "network_name": "net1",
                           "network_mode": "bridged", "network_link": "br0"},
    "OP_NETWORK_DISCONNECT": {"group_name": "default", "network_name": "net1"},
    "OP_INSTANCE_CREATE": {"instance_name": "inst1.example.com", "mode": "create",
                           "disks": [{"size": 1024}], "nics": [{}], "pnode": "node1",
                           "os_type": "busybox+default", "disk_template": "plain"},
    "OP_INSTANCE_REINSTALL": {"instance_name": "inst1", "os_type": "busybox"},
    "OP_INSTANCE_REMOVE": {"instance_name": "inst1"},
    "OP_INSTANCE_RENAME": {"instance_name": "inst1", "new_name": "inst2"},
    "OP_INSTANCE_STARTUP": {"instance_name": "inst1", "beparams": {"maxmem": 256}},
    "OP_INSTANCE_SHUTDOWN": {"instance_name": "inst1", "timeout": 0},
    "OP_INSTANCE_REBOOT": {"instance_name": "inst1", "reboot_type": "hard"},
    "OP_INSTANCE_CONSOLE": {"instance_name": "inst1"},
    "OP_INSTANCE_ACTIVATE_DISKS": {"instance_name": "inst1"},
    "OP_INSTANCE_DEACTIVATE_DISKS": {"instance_name": "inst1"},
    "OP_INSTANCE_RECREATE_DISKS": {"instance_name": "inst1", "disks": [0]},
    "OP_INSTANCE_QUERY_DATA": {"instances": ["inst1"]},
    "OP_INSTANCE_SET_PARAMS": {"instance_name": "inst1",
                               "disks": [["add", -1, {"size": 512}]],
                               "nics": [["modify", 0, {"ip": None}]]},
    "OP_INSTANCE_GROW_DISK": {"instance_name": "inst1", "disk": 0, "amount": 1024},
    "OP_NODE_QUERY_STORAGE": {"output_fields": ["name", "size"], "storage_type": "lvm-vg"},
    "OP_NODE_MODIFY_STORAGE": {"node_name": "node1", "storage_type": "lvm-pv",
                               "name": "/dev/sdb", "changes": {"allocatable": False}},
    "OP_REPAIR_NODE_STORAGE": {"node_name": "node1", "storage_type": "lvm-vg",
                               "name": "xenvg"},
    "OP_NODE_QUERYVOLS": {"output_fields": ["node", "name"], "nodes": ["node1"]},
    "OP_BACKUP_QUERY": {"nodes": ["node1"]},
    "OP_BACKUP_PREPARE": {"instance_name": "inst1", "mode": "local"},
    "OP_BACKUP_EXPORT": {"instance_name": "inst1", "target_node": "node2",
                         "shutdown": True, "long_sleep": True},
    "OP_BACKUP_REMOVE": {"instance_name": "inst1"},
    "OP_INSTANCE_FAILOVER": {"instance_name": "inst1", "target_node": "node2",
                             "ignore_consistency": True, "shutdown_timeout": 30},
    "OP_INSTANCE_MIGRATE": {"instance_name": "inst1", "mode": "non-live", "live": False,
                            "cleanup": False, "allow_failover": True,
                            "allow_runtime_changes": False, "ignore_hvversions": True,
                            "iallocator": "hail"},
    "OP_NODE_MIGRATE": {"node_name": "node1", "mode": "live", "target_node": "node2",
                        "iallocator": None, "ignore_ipolicy": True},
    # evacuations and moves
    "OP_NODE_EVACUATE": {"node_name": "node1", "mode": "secondary-only",
                         "remote_node": "node3", "early_release": True},
    "OP_GROUP_EVACUATE": {"group_name": "default", "target_groups": ["other"],
                          "sequential": True, "force_failover": False},
    "OP_INSTANCE_CHANGE_GROUP": {"instance_name": "inst1", "iallocator": "hail"},
    "OP_INSTANCE_MOVE": {"instance_name": "inst1", "target_node": "node2",
                         "compress": "gzip", "shutdown_timeout": 10},
    "OP_INSTANCE_REPLACE_DISKS": {"instance_name": "inst1", "mode": "replace_new_secondary",
                                  "remote_node": "node3", "disks": [0, 1],
                                  "early_release": True, "ignore_ipolicy": True},
}

# For every (non-reserved) parameter name, values its kind must refuse.
BAD = {
    "dry_run": [1, "yes"],
    "debug_level": [-1, 1.5, True, "3"],
    "priority": [5, -20, "0", 0.0, True, None.__class__],
    "depends": [[1], [[1]], [[1, ["running"]]], [["x", []]], [["-1", []]], [[True, []]],
                "1", [[1, "success"]]],
    "comment": [5, ["x"]],
    "reason": [[["a", "b"]], [["a", "b", "c"]], [[1, "b", 2]], "reason", [["a", "b", 1.5]]],
    "duration": ["10", True, float("nan"), float("inf"), [1]],
    "on_master": [1, "true"],
    "on_nodes": ["node1", [""], [1]],
    "on_node_uuids": ["u", [""], [None]],
    "repeat": [-1, 1.0, "2"],
    "interruptible": [0, "no"],
    "no_locks": [1],
    "notify_waitlock": [1, "yes"],
    "notify_exec": [0, None.__class__],
    "log_messages": ["a", [1], [None]],
    "fail": [1, "true"],
    "candidate_pool_size": [0, -3, "10", 2.0],
    "max_running_jobs": [0, True],
    "max_tracked_jobs": [0, "25"],
    "hvparams": [[], {"xen": {}}, {"kvm": []}, {"kvm": {1: 2}}, "kvm"],
    "beparams": [[], "x", {1: 2}],
    "nicparams": [{"bogus": "x"}, {"mode": 3}, []],
    "diskparams": [{"floppy": {}}, {"drbd": "x"}, []],
    # (bounds, [[5, 1]] or [[-1, 3]], are the logical unit's check, as in Ganeti)
    "uid_pool": [[[5]], [["1", "2"]], [1, 2], "1-2"],
    "add_uids": [[[1, 2, 3]]],
    "remove_uids": [[[None, 2]]],
    "default_iallocator": [5, ["hail"]],
    "ipolicy": ["std", [1]],
    "what": ["instances", "", 1, None.__class__],
    "node_name": ["", 5, "node2\n", "node 2", "node2.example.com\n", "-node2"],
    "primary_ip": ["192.0.2", "node1", 5],
    "secondary_ip": ["::g", 5],
    "readd": [1, "yes"],
    "group_name": ["", 5, "rack2\n", "rack\n2", " rack2"],
    "OP_TEST_ALLOCATOR.group_name": [5], "OP_TEST_ALLOCATOR.nics": ["x", [5]],
    "OP_TEST_ALLOCATOR.disks": ["x", {}], "direction": ["up", 1],
    "memory": [-1, "x"], "vcpus": [-1, "x"], "os": [5], "evac_mode": ["most", 1],
    "target_groups": ["g", [""]], "spindle_use": [-1, "x"], "count": [-1, "x"],
    "min_gain": [-0.5, "x"],
    "new_name": ["", None.__class__, "rack3\n", "rack3\t"],
    "alloc_policy": ["sometimes", 1],
    "ndparams": ["x", [], 5],  # unknown keys: refused while coercing (TypeEnforcementError)
    "enabled_hypervisors": ["kvm", ["vmware"], [1]],
    "enabled_disk_templates": ["plain", ["floppy"]],
    "maintain_node_health": ["yes", 1],
    "prealloc_wipe_disks": ["no"],
    "modify_etc_hosts": [0],
    "use_external_mip_script": ["true"],
    "enabled_user_shutdown": [1],
    "default_iallocator_params": ["x", []],
    "mac_prefix": [5, ["aa:00:00"]],
    "master_netmask": ["24", 2.5, True],
    "master_netdev": [1, True, ["eth0"]],
    "drbd_helper": [1, True, ["/bin/true"]],
    "reserved_lvs": ["xenvg/root", [""], [1]],
    "hidden_os": [[["hide", "lenny"]], [["add", ""]], ["lenny"]],
    "blacklisted_os": [[["add"]], "x"],
    "os_hvp": [{"": {"fake": {}}}, {"debian": {"fake": 1}}, {"debian": {"": {}}}, "x"],
    "OP_CLUSTER_SET_PARAMS.osparams": [{"debian": 1}, {"": {}}, ["debian"]],
    "osparams_private_cluster": [{"debian": "x"}, {"": {}}],
    "file_storage_dir": [5],
    "OP_CLUSTER_SET_PARAMS.vg_name": [5, ["xenvg"]],
    "shared_file_storage_dir": [[]],
    "gluster_storage_dir": [1.5],
    "install_image": [True],
    "zeroing_image": [5],
    "compression_tools": ["gzip", [""]],
    "enabled_data_collectors": [{"lv": "yes"}, []],
    "data_collector_interval": [{"lv": "5"}, {"lv": 1.5}],
    "nodes": ["node2", [""]],
    "skip_checks": [["everything"], "nplusone_mem"],
    "master_candidate": ["yes", 1],
    "offline": ["no"],
    "drained": [0],
    "auto_promote": [None.__class__, "x"],
    "master_capable": ["true"],
    "vm_capable": [2],
    "node_uuid": ["", 3],
    "force": [1, "x"],
    "debug_simulate_errors": [1],
    "error_codes": ["yes"],
    "ignore_errors": ["ENODERPC", [1]],
    "verbose": [2],
    "verify_clutter": ["x"],
    "node_uuids": [[""], "u"],
    "group": [5, ""],
    "fields": ["id", [""], [1], {"id": 1}],
    "qfilter": ["id", [], ["~~", "a", 1], ["=", "id"], ["=", "id", [1]], 5],
    "use_locking": [1, "false"],
    "kind": ["vm", "", 1, "CLUSTER"],
    "name": [5, ["n"]],
    "tags": ["tag", [1], [None]],
    "pattern": ["", 5],  # a pattern that does not compile fails in the LU
    "node_names": ["node1", [""], [1]],
    "output_fields": ["name", [""], [1], None.__class__],
    "names": ["debian", [""], [2]],
    "command": ["power", "", 1, None.__class__],
    "timeout": [0, -1, 901, 1.5, "60"],
    "ignore_status": [1, "yes"],
    "power_delay": [-1, "2", True],
    "powered": ["yes", 1],
    # instances
    "OP_INSTANCE_SHUTDOWN.timeout": [-1, 1.5, "60", None.__class__],
    "instance_name": ["", 5, None.__class__],
    "instance_uuid": ["", 5],
    "force_variant": [1], "wait_for_sync": ["yes"], "name_check": [0], "ignore_ipolicy": [1],
    "opportunistic_locking": ["x"], "identify_defaults": [1], "ip_check": [0],
    "conflicts_check": ["no"], "no_install": [1], "start": ["yes"], "absolute": [1],
    "ignore_failures": [1], "ignore_offline_nodes": ["x"], "no_remember": [0],
    "startup_paused": [1], "ignore_secondaries": [1], "ignore_size": [1], "static": [1],
    "hotplug": ["no"], "hotplug_if_possible": [1],
    "disks": ["x", {}, [[]], [["add"]], [[True, {}]], [["grow", 0, {}]]],
    "OP_INSTANCE_CREATE.disks": ["x", [5], [{"size": 1.5}], [{"": 1}], [{"mode": ""}],
                                 None.__class__],
    "OP_INSTANCE_SET_PARAMS.disks": ["x", [[0, 1, {}]], [["add", -1, 5]],
                                     [["modify", None, {}]], [["add", {}], ["add", 0, {}]]],
    "nics": ["x", [{"bogus": "1"}], [{"ip": 5}], None.__class__],
    "OP_INSTANCE_SET_PARAMS.nics": ["x", [["add", -1, {"bogus": "x"}]], [["swap", 0, {}]]],
    "disk_template": ["floppy", 5], "hypervisor": ["vmware", 1],
    "file_driver": ["ext4", 1], "iallocator": [5],
    "mode": ["clone", None.__class__, 1], "os_type": [5], "os_name": [5],
    "osparams": ["x", [], {1: 2}], "osparams_private": ["x", []], "osparams_secret": [[]],
    "pnode": [5], "pnode_uuid": [5], "snode": [5], "snode_uuid": [5],
    "remote_node": [5], "remote_node_uuid": [5],
    "src_node": [5], "src_node_uuid": [5], "src_path": [5], "compress": [5, None.__class__],
    "source_shutdown_timeout": [-1, "1"], "shutdown_timeout": [-1, 1.5, "120"],
    "admin_state_source": ["root", 1], "reboot_type": ["warm", None.__class__],
    "runtime_mem": [0, -5, "512"],
    **{f"{op}.hvparams": [[], "kvm", {1: 2}] for op in (
        "OP_INSTANCE_CREATE", "OP_INSTANCE_STARTUP", "OP_INSTANCE_SET_PARAMS")},
    "OP_INSTANCE_CREATE.group_name": [5, []],
    "forthcoming": ["yes", 1], "commit": [0, "no"],
    "OP_INSTANCE_RENAME.new_name": ["", 5, None.__class__],
    "disk": [-1, 16, "0", None.__class__], "amount": [-1, "1G", None.__class__],
    "instances": ["inst1", [""]],
    "OP_INSTANCE_RECREATE_DISKS.disks": ["x", [-1], [[0, "x"]], [[0]]],
    # networks
    "network_name": ["", 5, "net\n1", " net1", None.__class__],
    "network": ["10.1.0.0/24/1", "10.1.0.0/33", "::/64", 5, None.__class__],
    "gateway": ["10.1.0.300", "fe80::1", 5],
    "storage_type": ["lvm", 5, "", ["lvm-vg"]],
    "changes": ["x", [1], 5],
    "ignore_consistency": [1, "yes"],
    "OP_NETWORK_SET_PARAMS.gateway": ["nothing", "fe80::1", 5],
    "network6": ["10.1.0.0/24", "fe80::/129", 5],
    "gateway6": ["10.1.0.1", 5],
    "add_reserved_ips": ["10.1.0.5", ["10.1.0.256"], ["::1"], [5]],
    "remove_reserved_ips": ["10.1.0.5", ["x"]],
    "network_mode": ["bridge", "", 5, None.__class__],
    "network_link": ["", 5, None.__class__],
    "network_vlan": [5, None.__class__],
    # exports
    "target_node": [5, {}], "target_node_uuid": [5], "shutdown": [1, "yes"],
    "remove_instance": [1], "ignore_remove_failures": ["x"], "x509_key_name": ["x", 5],
    "destination_x509_ca": [5], "long_sleep": [1],
    "OP_BACKUP_EXPORT.mode": ["clone", 1],
    # migration and failover
    "OP_INSTANCE_MIGRATE.mode": ["live-ish", 1, True],
    "OP_NODE_MIGRATE.mode": ["offline", 0],
    "OP_INSTANCE_MIGRATE.target_node": [5, ["node2"]],
    "OP_INSTANCE_FAILOVER.target_node": [5, {}],
    "OP_NODE_MIGRATE.target_node": [5, True],
    "OP_NODE_MIGRATE.node_name": ["", 5, None.__class__],
    "live": [1, "yes"], "allow_runtime_changes": [0, "no", None.__class__],
    "cleanup": [1, "x"], "allow_failover": ["yes"], "ignore_hvversions": [0],
    # evacuations and moves
    "OP_NODE_EVACUATE.mode": ["primary", None.__class__, 1],
    "OP_NODE_EVACUATE.node_name": ["", 5, None.__class__],
    "ignore_soft_errors": ["yes", 1],
    "sequential": ["yes"], "force_failover": [0],
    "OP_INSTANCE_MOVE.target_node": ["", 5, None.__class__],
    "OP_INSTANCE_MOVE.target_node_uuid": [5, True],
    # replace-disks
    "OP_INSTANCE_REPLACE_DISKS.mode": ["replace_both", "", 1, None.__class__],
    "OP_INSTANCE_REPLACE_DISKS.disks": [0, [-1], [16], ["0"], [True]],
    "early_release": [1, "yes"],
}


def _bad(op_id, name):
    """The bad values of a parameter: BAD["OP_X.name"] where one opcode's kind
    differs from the others' of that name, else BAD["name"]."""
    return BAD.get(f"{op_id}.{name}", BAD.get(name))


def _wire(op_id, **extra):
    data = {"OP_ID": op_id, **copy.deepcopy(GOOD[op_id])}
    data.update(extra)
    return data


class TableTest(SynchronousTestCase):
    def test_every_declared_opcode_has_test_data(self):
        self.assertEqual(sorted(GOOD), sorted(opcodes.OPCODES))

    def test_every_parameter_has_bad_values(self):
        for op in opcodes.OPCODES.values():
            for param in op.all_params:
                if not param.reserved:
                    self.assertIsNotNone(_bad(op.op_id, param.name),
                                         f"{op.op_id}.{param.name}")

    def test_declarations_are_consistent(self):
        for op in catalog.ALL:
            self.assertTrue(op.op_id.startswith("OP_"))
            self.assertTrue(op.doc and "\n" not in op.doc)
            names = [p.name for p in op.all_params]
            self.assertEqual(len(names), len(set(names)))

    def test_bad_declarations_are_refused(self):
        self.assertRaises(ValueError, base.OpCode, "OP_bad", "x")
        self.assertRaises(ValueError, base.OpCode, "OP_X", "x", (), summary_param="nope")
        self.assertRaises(ValueError, base.OpCode, "OP_X", "x",
                          (base.opt("priority", kinds.INT, "dup"),))
        self.assertRaises(ValueError, base.Param, "Bad", kinds.INT, "doc")
        self.assertRaises(ValueError, base.Param, "x", kinds.INT, "two\nlines")
        self.assertRaises(ValueError, base.Param, "x", kinds.INT, "doc", default=1,
                          required=True)


class ValidateGoodTest(SynchronousTestCase):
    def test_good_input_gets_all_defaults(self):
        for op_id, op in opcodes.OPCODES.items():
            result = opcodes.validate(_wire(op_id))
            self.assertEqual(result["OP_ID"], op_id)
            self.assertEqual(sorted(result),
                             sorted(["OP_ID"] + [p.name for p in op.stored_params]))
            # validating the stored form again gives the same stored form
            self.assertEqual(opcodes.validate(result), result)

    def test_common_defaults(self):
        result = opcodes.validate({"OP_ID": "OP_CLUSTER_QUERY"})
        self.assertEqual(result, {"OP_ID": "OP_CLUSTER_QUERY", "dry_run": None,
                                  "debug_level": None, "priority": 0, "depends": None,
                                  "comment": None, "reason": []})

    def test_test_delay_defaults_and_float(self):
        result = opcodes.validate({"OP_ID": "OP_TEST_DELAY", "duration": 10})
        self.assertEqual(result["duration"], 10.0)
        self.assertIsInstance(result["duration"], float)
        self.assertEqual({k: result[k] for k in ("on_master", "on_nodes", "on_node_uuids",
                                                  "repeat", "interruptible", "no_locks")},
                         {"on_master": True, "on_nodes": [], "on_node_uuids": None,
                          "repeat": 0, "interruptible": False, "no_locks": True})

    def test_defaults_are_fresh_copies(self):
        first = opcodes.validate(_wire("OP_TEST_DELAY"))
        first["on_nodes"].append("node9")
        first["reason"].append(["x", "y", 1])
        second = opcodes.validate(_wire("OP_TEST_DELAY"))
        self.assertEqual(second["on_nodes"], [])
        self.assertEqual(second["reason"], [])

    def test_input_is_not_modified_or_shared(self):
        data = _wire("OP_TEST_DELAY", on_nodes=["n1"], reason=[["gnt:user", "r", 5]])
        before = copy.deepcopy(data)
        result = opcodes.validate(data)
        self.assertEqual(data, before)
        result["on_nodes"].append("n2")
        self.assertEqual(data["on_nodes"], ["n1"])

    def test_null_for_a_defaulted_parameter_means_default(self):
        result = opcodes.validate(_wire("OP_TEST_DELAY", on_master=None, reason=None,
                                        priority=None, repeat=None))
        self.assertEqual((result["on_master"], result["reason"], result["priority"],
                          result["repeat"]), (True, [], 0, 0))

    def test_accepted_common_values(self):
        deps = [[-1, []], [5, ["success", "error"]], ["12", ["canceled"]]]
        result = opcodes.validate(_wire("OP_CLUSTER_QUERY", dry_run=True, debug_level=3,
                                        priority=-10, depends=deps, comment="why",
                                        reason=[["gnt:client:gnt-debug", "test", 17]]))
        self.assertEqual(result["depends"], deps)
        self.assertEqual(result["priority"], -10)
        self.assertEqual(opcodes.validate(_wire("OP_CLUSTER_QUERY", priority=10))["priority"],
                         10)

    def test_cluster_set_params_values(self):
        data = _wire("OP_CLUSTER_SET_PARAMS", candidate_pool_size=3, max_running_jobs=1,
                     max_tracked_jobs=30, hvparams={"kvm": {"acpi": False}},
                     beparams={"vcpus": 2}, nicparams={"link": "br0", "vlan": None},
                     diskparams={"drbd": {"resync-rate": 100}}, uid_pool=[[1000, 1009]],
                     add_uids=[[5, 5]], remove_uids=[], default_iallocator="",
                     ipolicy={"vcpu-ratio": 2.0})
        result = opcodes.validate(data)
        self.assertEqual(result["uid_pool"], [[1000, 1009]])
        self.assertEqual(result["hvparams"], {"kvm": {"acpi": False}})

    def test_reserved_parameters_accept_only_defaults(self):
        # Real Ganeti clients send every parameter, mostly null.
        result = opcodes.validate(_wire("OP_CLUSTER_SET_PARAMS",
                                        instance_communication_network=None,
                                        hv_state={}, ndparams=None))
        self.assertNotIn("instance_communication_network", result)
        # a given (empty) value is kept as given: luxid echoes it in the job's opcode
        self.assertEqual(result["hv_state"], {})
        for key, value in [("instance_communication_network", "net1")]:
            err = self.assertRaises(OpPrereqError, opcodes.validate,
                                    _wire("OP_CLUSTER_SET_PARAMS", **{key: value}))
            self.assertEqual(err.args[1], ECODE_INVAL)
            self.assertIn(f"OP_CLUSTER_SET_PARAMS.{key}", err.args[0])
            self.assertIn("not supported", err.args[0])

    def test_query_filter_is_checked_structurally(self):
        result = opcodes.validate(_wire("OP_QUERY", qfilter=["|", ["=", "id", 1],
                                                              ["=", "id", 2]]))
        self.assertEqual(result["qfilter"], ["|", ["=", "id", 1], ["=", "id", 2]])


class ValidateBadTest(SynchronousTestCase):
    def _refused(self, data, *fragments):
        err = self.assertRaises(OpPrereqError, opcodes.validate, data)
        self.assertEqual(err.args[1], ECODE_INVAL, err.args)
        for fragment in fragments:
            self.assertIn(fragment, err.args[0])
        return err

    def test_each_parameter_refuses_bad_values(self):
        for op_id, op in opcodes.OPCODES.items():
            for param in op.all_params:
                if param.reserved:
                    continue
                for bad in _bad(op_id, param.name):
                    if bad is type(None):
                        if param.kind.nullable or not param.required:
                            continue
                        bad = None
                    try:
                        opcodes.validate(_wire(op_id, **{param.name: bad}))
                    except OpPrereqError as err:
                        self.assertEqual(err.args[1], ECODE_INVAL)
                        self.assertIn(f"{op_id}.{param.name}", err.args[0])
                    else:
                        self.fail(f"{op_id}.{param.name} accepted {bad!r}")

    def test_missing_required_parameters(self):
        for op_id, op in opcodes.OPCODES.items():
            for param in op.params:
                if param.required:
                    data = _wire(op_id)
                    del data[param.name]
                    self._refused(data, f"'{op_id}.{param.name}' is required but missing")
                    self._refused(_wire(op_id, **{param.name: None}),
                                  f"'{op_id}.{param.name}' is required but null")

    def test_unknown_keys(self):
        for op_id in opcodes.OPCODES:
            self._refused(_wire(op_id, bogus=1), op_id, "'bogus'")
        self._refused(_wire("OP_TEST_DELAY", __version__=1), "'__version__'")

    def test_not_an_opcode(self):
        self._refused(["OP_TEST_DELAY"], "JSON object")
        self._refused(None, "JSON object")
        self._refused({"duration": 1}, "no OP_ID")
        self._refused({"OP_ID": "OP_RESTRICTED_COMMAND"},
                      "Unknown opcode 'OP_RESTRICTED_COMMAND'")
        self._refused({"OP_ID": 5}, "must be a string")
        self._refused({"OP_ID": "op_test_delay", "duration": 1}, "Unknown opcode")

    def test_messages_name_the_position(self):
        err = self._refused(_wire("OP_CLUSTER_SET_PARAMS", uid_pool=[[1, 2], [9]]),
                            "OP_CLUSTER_SET_PARAMS.uid_pool[1]", "uid range")
        self.assertIn("fails validation", err.args[0])
        self._refused(_wire("OP_TEST_DELAY", depends=[[1, ["success", "running"]]]),
                      "OP_TEST_DELAY.depends[0][1][1]", '"running"')
        self._refused(_wire("OP_CLUSTER_SET_PARAMS", hvparams={"kvm": {}, "xen": {}}),
                      "hvparams", 'key "xen"')
        # (a pattern that does not compile is the logical unit's to refuse, as Ganeti's)
        self.assertEqual(opcodes.validate(_wire("OP_TAGS_SEARCH", pattern="a("))["pattern"],
                         "a(")
        self._refused(_wire("OP_QUERY", qfilter=["=", "id"]), "OP_QUERY.qfilter",
                      "takes a field and a value")
        self._refused(_wire("OP_TEST_DELAY", duration="-1"), 'a number, got "-1"')

    def test_priority_values(self):
        for prio in (-20, -11, -1, 1, 11, 19):
            self._refused(_wire("OP_TEST_DELAY", priority=prio), "OP_TEST_DELAY.priority")


class ValidateJobTest(SynchronousTestCase):
    def test_good_job(self):
        ops = [_wire("OP_TEST_DELAY"), _wire("OP_CLUSTER_QUERY")]
        result = opcodes.validate_job(ops)
        self.assertEqual([op["OP_ID"] for op in result], ["OP_TEST_DELAY", "OP_CLUSTER_QUERY"])

    def test_bad_jobs(self):
        for ops, fragment in [([], "at least one opcode"), ({}, "list of opcodes"),
                              ([_wire("OP_CLUSTER_QUERY"), {"OP_ID": "OP_TEST_DELAY"}],
                               "Opcode 1: Parameter 'OP_TEST_DELAY.duration'")]:
            err = self.assertRaises(OpPrereqError, opcodes.validate_job, ops)
            self.assertEqual(err.args[1], ECODE_INVAL)
            self.assertIn(fragment, err.args[0])


class SummaryTest(SynchronousTestCase):
    def _summary(self, op_id, **extra):
        return opcodes.summary(opcodes.validate(_wire(op_id, **extra)))

    def test_summaries(self):
        self.assertEqual(self._summary("OP_TEST_DELAY", duration=10), "TEST_DELAY(10.0)")
        self.assertEqual(self._summary("OP_TEST_DELAY", duration=0.01), "TEST_DELAY(1.0e-2)")
        self.assertEqual(self._summary("OP_TAGS_GET"), "TAGS_GET(TagKindCluster)")
        self.assertEqual(self._summary("OP_TAGS_GET", kind="instance", name="web1"),
                         "TAGS_GET(TagKindInstance)")
        self.assertEqual(self._summary("OP_TAGS_SET"), "TAGS_SET")
        self.assertEqual(self._summary("OP_TAGS_DEL"), "TAGS_DEL")
        self.assertEqual(self._summary("OP_TAGS_SEARCH"), "TAGS_SEARCH(^web)")
        self.assertEqual(self._summary("OP_QUERY"), "QUERY(job)")
        self.assertEqual(self._summary("OP_QUERY_FIELDS"), "QUERY_FIELDS(lock)")
        self.assertEqual(self._summary("OP_CLUSTER_QUERY"), "CLUSTER_QUERY")
        self.assertEqual(self._summary("OP_CLUSTER_SET_PARAMS"), "CLUSTER_SET_PARAMS")

    def test_undeclared_and_invalid_opcodes(self):
        self.assertEqual(opcodes.summary({"OP_ID": "OP_RESTRICTED_COMMAND",
                                          "instance_name": "x"}), "RESTRICTED_COMMAND")
        self.assertEqual(opcodes.summary({"OP_ID": 3}), "INVALID_OP")
        self.assertEqual(opcodes.summary({}), "INVALID_OP")

    def test_haskell_show_double(self):
        cases = {0.0: "0.0", 0.1: "0.1", 1.0: "1.0", 10.0: "10.0",
                 2.5: "2.5", 1234567.0: "1234567.0", 9999999.5: "9999999.5",
                 1e7: "1.0e7", 12345678.9: "1.23456789e7", 0.01: "1.0e-2",
                 0.05: "5.0e-2", 0.099: "9.9e-2", 1e22: "1.0e22", 5e-324: "5.0e-324",
                 -1.5: "-1.5", -0.001: "-1.0e-3", 123456789012.0: "1.23456789012e11"}
        for value, text in cases.items():
            self.assertEqual(base.haskell_show_double(value), text, value)
        self.assertEqual(base.haskell_show_double(-0.0), "-0.0")
        self.assertEqual(base.haskell_show_double(float("nan")), "NaN")
        self.assertEqual(base.haskell_show_double(float("-inf")), "-Infinity")

    def test_default_format(self):
        self.assertIsNone(base.default_summary_format(None))
        self.assertEqual(base.default_summary_format(["a", "b"]), "a,b")
        self.assertEqual(base.default_summary_format(True), "True")
        self.assertEqual(base.default_summary_format(3), "3")

    @settings(max_examples=200, deadline=None)
    @given(st.floats(min_value=0, max_value=1e30, allow_nan=False))
    def test_summary_of_any_duration_reads_back(self, duration):
        text = self._summary("OP_TEST_DELAY", duration=duration)
        self.assertTrue(text.startswith("TEST_DELAY(") and text.endswith(")"))
        self.assertEqual(float(text[len("TEST_DELAY("):-1]), duration)


class DependsTest(SynchronousTestCase):
    def test_resolution(self):
        self.assertIsNone(opcodes.resolve_depends(None, 10))
        deps = [[-1, ["success"]], [-9, []], [3, ["error", "canceled"]], ["7", []]]
        self.assertEqual(opcodes.resolve_depends(deps, 10),
                         [[9, ["success"]], [1, []], [3, ["error", "canceled"]], [7, []]])
        self.assertEqual(deps[0], [-1, ["success"]])  # not modified

    def test_errors(self):
        for deps, own, fragment in [
                ([[10, []]], 10, "Job 10 can't depend on itself"),
                ([["10", []]], 10, "can't depend on itself"),
                ([[-10, []]], 10, "Unable to resolve relative job ID -10"),
                ([[-1, []]], 1, "Unable to resolve"),
                ([[1, ["running"]]], 5, '"running"'),
                ([[1]], 5, "Invalid job dependencies[0]"),
                ("x", 5, "Invalid job dependencies")]:
            err = self.assertRaises(OpPrereqError, opcodes.resolve_depends, deps, own)
            self.assertEqual(err.args[1], ECODE_INVAL)
            self.assertIn(fragment, err.args[0])


class ReasonAndQueueTest(SynchronousTestCase):
    def test_reason_entry(self):
        self.assertEqual(opcodes.reason_entry("OP_TEST_DELAY", 12, 3, 1700000000123456789),
                         ["gnt:opcode:test_delay", "job=12;index=3", 1700000000123456789])
        self.assertEqual(opcodes.reason_source("OP_CLUSTER_SET_PARAMS"),
                         "gnt:opcode:cluster_set_params")

    def test_prepare_job_ops(self):
        ops = opcodes.validate_job([
            _wire("OP_TEST_DELAY", reason=[["gnt:client:gnt-debug", "delay", 1]]),
            _wire("OP_CLUSTER_QUERY", depends=[[-1, ["success"]]])])
        before = copy.deepcopy(ops)
        prepared = opcodes.prepare_job_ops(ops, 42, 999)
        self.assertEqual(ops, before)
        self.assertEqual(prepared[0]["reason"], [["gnt:client:gnt-debug", "delay", 1],
                                                 ["gnt:opcode:test_delay", "job=42;index=0",
                                                  999]])
        self.assertEqual(prepared[1]["reason"],
                         [["gnt:opcode:cluster_query", "job=42;index=1", 999]])
        self.assertEqual(prepared[1]["depends"], [[41, ["success"]]])
        self.assertIsNone(prepared[0]["depends"])
        # the prepared form is still a valid opcode
        self.assertEqual([opcodes.validate(op) for op in prepared], prepared)


class ReferenceDocTest(SynchronousTestCase):
    def test_generated_reference_is_in_the_docs(self):
        doc = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "design"
               / "opcodes-and-jobs.md").read_text()
        begin = "<!-- BEGIN GENERATED OPCODE REFERENCE -->\n"
        end = "<!-- END GENERATED OPCODE REFERENCE -->"
        section = doc[doc.index(begin) + len(begin):doc.index(end)]
        self.assertEqual(section.strip(), opcodes.reference_markdown().strip(),
                         "regenerate the reference with "
                         "python -c 'from ganeti.core import opcodes; "
                         "print(opcodes.reference_markdown())'")


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner,
                                                                  max_size=4),
    max_leaves=12)


class FuzzTest(SynchronousTestCase):
    @settings(max_examples=300, deadline=None)
    @given(st.sampled_from(sorted(GOOD)), st.dictionaries(
        st.sampled_from(sorted({p.name for op in opcodes.OPCODES.values()
                                for p in op.all_params}) + ["junk"]), _json, max_size=4))
    def test_only_wrong_input_errors(self, op_id, extra):
        data = _wire(op_id, **extra)
        try:
            result = opcodes.validate(data)
        except OpPrereqError as err:
            self.assertEqual(err.args[1], ECODE_INVAL)
        else:
            self.assertEqual(opcodes.validate(result), result)
            opcodes.summary(result)


class ReservationParamsTest(SynchronousTestCase):
    """OP_INSTANCE_CREATE's name, disks, NICs and mode are required unless the
    opcode reserves (``forthcoming``) or commits a reservation (``commit``)."""

    def test_a_reservation_needs_no_other_parameter(self):
        from ganeti.core.opcodes import luxid
        create = opcodes.OPCODES["OP_INSTANCE_CREATE"]
        stored = create.validate({"OP_ID": "OP_INSTANCE_CREATE", "forthcoming": True})
        self.assertEqual([stored[k] for k in ("instance_name", "disks", "nics", "mode")],
                         [None] * 4)
        self.assertIsNone(luxid.refusal([{"OP_ID": "OP_INSTANCE_CREATE",
                                          "forthcoming": True}]))
        # a commit names its reservation
        with self.assertRaises(OpPrereqError) as caught:
            create.validate({"OP_ID": "OP_INSTANCE_CREATE", "commit": True})
        self.assertEqual(caught.exception.args, (
            "Parameter 'OP_INSTANCE_CREATE.instance_name' is required but missing",
            ECODE_INVAL))
        create.validate({"OP_ID": "OP_INSTANCE_CREATE", "commit": True, "instance_name": "a"})
        # neither flag, or a false one: Ganeti's required parameters
        for flags in ({}, {"forthcoming": False}):
            with self.assertRaises(OpPrereqError):
                create.validate({"OP_ID": "OP_INSTANCE_CREATE", "instance_name": "a",
                                 **flags})
        self.assertIn("key 'disks' not found", luxid.refusal(
            [{"OP_ID": "OP_INSTANCE_CREATE", "instance_name": "a", "forthcoming": False}]))
        self.assertEqual(create.param("disks").describe_default(),
                         "required unless forthcoming or commit")

"""The opcode ``gnt-cluster modify`` builds from Ganeti's options, and the shared
instance-policy options (also used by gnt-group)."""

import io

from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import gnt_cluster, gnt_cluster_modify, ipolicy_opts
from ganeti.cli.framework import UsageError, build_parser
from ganeti.core.errors import OpPrereqError, ParameterError, TypeEnforcementError

SPEC = "memory-size=128,cpu-count=1,disk-count=1,disk-size=1G,nic-count=1,spindle-use=1"
SPEC_VALUES = {"memory-size": 128, "cpu-count": 1, "disk-count": 1, "disk-size": 1024,
               "nic-count": 1, "spindle-use": 1}


def opcode(*argv):
    parser = build_parser("gnt-cluster", "", gnt_cluster.COMMANDS, io.StringIO())
    return gnt_cluster_modify.modify_opcode(parser.parse_args(["modify", *argv]))


class ModifyOptionsTest(SynchronousTestCase):
    def test_options_added_for_issue_14(self):
        op = opcode("--mac-prefix", "AA:00:00", "--reserved-lvs", "vg/a,vg/b",
                    "--compression-tools", "gzip,lzop", "--prealloc-wipe-disks", "yes",
                    "--maintain-node-health", "no", "--default-iallocator-params", "x=1",
                    "--node-parameters", "ssh_port=2222", "--modify-etc-hosts", "no",
                    "--use-external-mip-script", "true", "--user-shutdown", "false",
                    "--enabled-hypervisors", "kvm,fake", "--enabled-disk-templates",
                    "file,diskless", "--file-storage-dir", "/srv/f",
                    "--shared-file-storage-dir", "/srv/s", "--install-image", "/i",
                    "--zeroing-image", "http://z", "--enabled-data-collectors",
                    "lv=false,drbd=True", "--data-collector-interval", "lv=2.5",
                    "--force")
        self.assertEqual(op, {
            "OP_ID": "OP_CLUSTER_SET_PARAMS", "mac_prefix": "AA:00:00",
            "reserved_lvs": ["vg/a", "vg/b"], "compression_tools": ["gzip", "lzop"],
            "prealloc_wipe_disks": True, "maintain_node_health": False,
            "default_iallocator_params": {"x": "1"}, "ndparams": {"ssh_port": "2222"},
            "modify_etc_hosts": False, "use_external_mip_script": True,
            "enabled_user_shutdown": False, "enabled_hypervisors": ["kvm", "fake"],
            "enabled_disk_templates": ["file", "diskless"], "file_storage_dir": "/srv/f",
            "shared_file_storage_dir": "/srv/s", "install_image": "/i",
            "zeroing_image": "http://z",
            "enabled_data_collectors": {"lv": False, "drbd": True},
            "data_collector_interval": {"lv": 2500000}, "force": True})

    def test_empty_values(self):
        self.assertEqual(opcode("--reserved-lvs", "")["reserved_lvs"], [])
        self.assertEqual(opcode("--compression-tools", "")["compression_tools"],
                         ["gzip", "gzip-fast", "gzip-slow"])

    def test_options_the_master_refuses_are_sent(self):
        self.assertEqual(opcode("-g", "")["vg_name"], "")  # disables lvm storage
        op = opcode("-g", "xenvg", "--drbd-usermode-helper", "/bin/true", "--master-netdev",
                    "eth1", "--master-netmask", "24", "--instance-communication-network",
                    "net", "--hypervisor-state", "kvm:mem_total=1")
        self.assertEqual((op["vg_name"], op["drbd_helper"], op["master_netdev"],
                          op["master_netmask"], op["instance_communication_network"],
                          op["hv_state"]),
                         ("xenvg", "/bin/true", "eth1", 24, "net",
                          {"kvm": {"mem_total": "1"}}))

    def test_parse_errors(self):
        for argv in (["--master-netmask", "x"], ["--data-collector-interval", "lv=0"],
                     ["--data-collector-interval", "lv=x"], ["--prealloc-wipe-disks", "maybe"]):
            with self.assertRaises((UsageError, SystemExit), msg=argv):
                opcode(*argv)


class IPolicyOptionsTest(SynchronousTestCase):
    def test_std_and_bounds(self):
        op = opcode("--ipolicy-std-specs", "memory-size=1G,cpu-count=2",
                    "--ipolicy-bounds-specs", f"min:{SPEC}/max:{SPEC}//min:{SPEC}/max:{SPEC}")
        self.assertEqual(op["ipolicy"]["std"], {"memory-size": 1024, "cpu-count": 2})
        self.assertEqual(op["ipolicy"]["minmax"],
                         [{"min": SPEC_VALUES, "max": SPEC_VALUES}] * 2)

    def test_ratios_and_default(self):
        op = opcode("--ipolicy-vcpu-ratio", "2.5", "--ipolicy-spindle-ratio", "default")
        self.assertEqual(op["ipolicy"], {"vcpu-ratio": 2.5, "spindle-ratio": "default"})

    def test_bounds_errors(self):
        cases = [("min:memory-size=1", OpPrereqError, "Missing parameters in ipolicy spec "
                                                      "min: cpu-count, disk-count"),
                 (f"low:{SPEC}", OpPrereqError, "Invalid key in bounds instance "
                                                "specifications: low"),
                 (f"min:{SPEC}//", ParameterError, "Empty section in option"),
                 (f"min:{SPEC}/min:{SPEC}", ParameterError, "Duplicated parameter 'min'"),
                 ("min:cpu-count", ParameterError, "Missing value for key 'cpu-count'"),
                 ("min:memory-size=1X", OpPrereqError, "Invalid parameter memory-size (1X)"),
                 ("min:cpu-count=two", TypeEnforcementError, "'cpu-count' (value two)")]
        for text, error, message in cases:
            err = self.assertRaises(error, opcode, "--ipolicy-bounds-specs", text)
            self.assertIn(message, err.args[0], text)

    def test_group_default_bounds(self):
        class Opts:
            ipolicy_bounds_specs = "default"
            ipolicy_disk_templates = "default"
            ipolicy_vcpu_ratio = None
            ipolicy_spindle_ratio = None

        self.assertEqual(ipolicy_opts.ipolicy_value(Opts(), group=True),
                         {"minmax": "default", "disk-templates": ["default"]})

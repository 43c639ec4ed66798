"""QueryClusterInfo, QueryConfigValues and QueryTags answers."""

import os

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import config as configmod
from ganeti.core import constants
from ganeti.core.errors import OpPrereqError
from ganeti.master.query.queries import ClusterQueries
from tests.fakes.configs import node_paths, reference_config_dict, small_config

# Every key Ganeti 3.0's `gnt-cluster info` and `version` read (reference 1.7).
INFO_KEYS = """software_version protocol_version config_version os_api_version export_version
vcs_version architecture name master default_hypervisor enabled_hypervisors hvparams os_hvp
beparams osparams ipolicy nicparams ndparams diskparams candidate_pool_size max_running_jobs
max_tracked_jobs mac_prefix master_netdev master_netmask use_external_mip_script
volume_group_name drbd_usermode_helper file_storage_dir shared_file_storage_dir
gluster_storage_dir maintain_node_health ctime mtime uuid tags uid_pool default_iallocator
default_iallocator_params reserved_lvs primary_ip_version prealloc_wipe_disks hidden_os
blacklisted_os enabled_disk_templates install_image instance_communication_network
zeroing_image compression_tools enabled_user_shutdown enabled_data_collectors
data_collector_interval modify_ssh_setup ssh_key_type ssh_key_bits""".split()


class QueriesTest(SynchronousTestCase):
    def setUp(self):
        self.cfg = configmod.load(configmod.dump(small_config()))
        self.paths = node_paths(self.mktemp())
        self.clock = Clock()
        self.clock.advance(1000)
        self.q = ClusterQueries(lambda: self.cfg, self.paths, self.clock)

    def test_cluster_info_keys_and_values(self):
        info = self.q.query_cluster_info()
        self.assertEqual(sorted(info), sorted(INFO_KEYS))
        self.assertEqual(info["name"], "cluster.test")
        self.assertEqual(info["master"], "node1.test")
        self.assertEqual(info["config_version"], constants.CONFIG_VERSION)
        self.assertEqual(info["default_hypervisor"], "fake")
        self.assertEqual(info["primary_ip_version"], 4)
        self.assertEqual(len(info["architecture"]), 2)
        self.assertEqual(set(info["ipolicy"]),
                         {"minmax", "std", "disk-templates", "vcpu-ratio", "spindle-ratio"})
        self.assertEqual(set(info["enabled_data_collectors"]),
                         set(info["data_collector_interval"]))

    def test_cluster_info_lists_every_hypervisors_parameters(self):
        # as Ganeti's, enabled or not; a config that lacks some gets their defaults
        del self.cfg.cluster.hvparams["xen-pvm"]
        hvparams = self.q.query_cluster_info()["hvparams"]
        self.assertEqual(sorted(hvparams), sorted(constants.HYPER_TYPES))
        self.assertEqual(hvparams["xen-pvm"], constants.HVC_DEFAULTS["xen-pvm"])
        self.assertEqual(hvparams["fake"], self.cfg.cluster.hvparams["fake"])

    def test_config_values(self):
        self.assertEqual(
            self.q.query_config_values(["cluster_name", "master_node", "drain_flag",
                                        "watcher_pause", "no_such_field", "ssh_key_bits"]),
            ["cluster.test", "node1.test", False, None, None, 2048])

    def test_drain_flag_and_watcher_pause_follow_files(self):
        os.makedirs(self.paths.queue_dir)
        open(self.paths.queue_drain, "w").close()
        with open(self.paths.watcher_pause_file, "w") as f:
            f.write("1500\n")
        self.assertEqual(self.q.query_config_values(["drain_flag", "watcher_pause"]),
                         [True, 1500.0])
        self.clock.advance(600)  # the pause ended
        self.assertEqual(self.q.query_config_values(["watcher_pause"]), [None])

    def test_tags(self):
        self.cfg = configmod.load(configmod.dump(configmod.parse(reference_config_dict())))
        self.assertEqual(self.q.query_tags("cluster", ""), ["env:test"])
        self.assertEqual(self.q.query_tags("node", "node1.example.test"), ["rack:1"])
        self.assertEqual(self.q.query_tags("instance", "web1.example.test"), [])
        self.assertEqual(self.q.query_tags("nodegroup", "default"), [])
        self.assertEqual(self.q.query_tags("network", "pubnet"), [])

    def test_tag_errors(self):
        with self.assertRaises(OpPrereqError) as cm:
            self.q.query_tags("node", "ghost")
        self.assertEqual(cm.exception.args, ("Node name ghost not found", "unknown_entity"))
        with self.assertRaises(OpPrereqError) as cm:
            self.q.query_tags("bogus", "")
        self.assertEqual(cm.exception.args[1], "wrong_input")
        with self.assertRaises(OpPrereqError) as cm:
            self.q.query_tags("node", None)
        self.assertEqual(cm.exception.args[1], "unknown_entity")

"""The node RPC call table: declarations, argument checks, wire helpers."""

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import constants, rpcdefs


class TableTest(SynchronousTestCase):
    def test_declared_calls(self):
        self.assertEqual(set(rpcdefs.CALLS), {
            "version", "node_info", "upload_file", "write_ssconf_files", "jobqueue_update",
            "jobqueue_rename", "jobqueue_purge", "test_delay", "node_verify", "node_leave_cluster",
            "jobqueue_update_many", "set_watcher_pause", "run_oob", "node_demote_from_mc",
            "hooks_runner", "instance_os_add", "config_update", "instance_info",
            "all_instances_info", "instance_events", "instance_list", "instance_start",
            "instance_shutdown",
            "instance_reboot", "instance_balloon_memory", "hypervisor_validate_params",
            "migration_info", "accept_instance", "instance_migrate",
            "instance_get_migration_status", "instance_finalize_migration_dst",
            "instance_finalize_migration_src",
            "os_diagnose", "os_validate", "os_get", "instance_run_rename", "os_export",
            "os_output",
            "blockdev_create", "blockdev_remove", "blockdev_grow", "blockdev_rename",
            "blockdev_assemble", "blockdev_shutdown", "blockdev_find", "blockdev_getdimensions",
            "blockdev_convert", "blockdev_image",
            "blockdev_getmirrorstatus", "blockdev_getmirrorstatus_multi",
            "blockdev_close", "blockdev_open",
            "blockdev_addchildren", "blockdev_removechildren", "drbd_disconnect_net",
            "drbd_attach_net", "drbd_wait_sync", "drbd_needs_activation", "drbd_helper",
            "bdev_sizes", "lv_list", "vg_list", "node_volumes", "file_storage_dir_create",
            "file_storage_dir_remove", "file_storage_dir_rename", "storage_list",
            "storage_modify", "storage_execute",
            "export_list", "export_info", "export_remove", "export_dump", "export_read",
            "export_write", "export_finalize", "export_abort", "instance_import_disk",
            "blockdev_read_chunk", "blockdev_write_chunk",
            "node_activate_master_ip", "node_deactivate_master_ip",
            "node_change_master_netmask"})
        for name, call in rpcdefs.CALLS.items():
            self.assertEqual(call.name, name)
            self.assertLessEqual(call.timeout_for([1] * len(call.args)), rpcdefs.MAX_TIMEOUT)
            self.assertTrue(call.doc)

    def test_timeout_classes(self):
        self.assertEqual((rpcdefs.TMO_FAST, rpcdefs.TMO_NORMAL, rpcdefs.TMO_SLOW), (10, 60, 900))

    def test_unknown_call(self):
        self.assertRaises(rpcdefs.RpcArgumentError, rpcdefs.get_call, "nope")


class ArgsTest(SynchronousTestCase):
    def test_count(self):
        err = self.assertRaises(rpcdefs.RpcArgumentError,
                                rpcdefs.CALLS["test_delay"].check_args, [])
        self.assertIn("test_delay takes 1 argument(s) (duration), 0 given", str(err))

    def test_not_a_list(self):
        self.assertRaises(rpcdefs.RpcArgumentError,
                          rpcdefs.CALLS["version"].check_args, {"a": 1})

    def test_types(self):
        check = rpcdefs.CALLS["upload_file"].check_args
        good = ["/var/lib/ganeti/config.data", "{}", 0o640, None, None, 1.5, 2]
        self.assertEqual(check(good), good)
        self.assertEqual(check(["/x", [1, "eJwDAAAAAAE="], 0o600, "root", 0, None, None])[2],
                         0o600)
        for i, bad in [(0, 3), (1, [7, "x"]), (2, True), (2, -1), (5, "now")]:
            args = list(good)
            args[i] = bad
            err = self.assertRaises(rpcdefs.RpcArgumentError, check, args)
            self.assertIn(rpcdefs.CALLS["upload_file"].args[i].name, str(err))

    def test_ssconf_keys(self):
        check = rpcdefs.CALLS["write_ssconf_files"].check_args
        check([{"master_node": "n1"}])
        self.assertRaises(rpcdefs.RpcArgumentError, check, [{"../x": "n1"}])
        self.assertRaises(rpcdefs.RpcArgumentError, check, [{"a": 1}])

    def test_rename_pairs(self):
        check = rpcdefs.CALLS["jobqueue_rename"].check_args
        check([[["job-1", "archive/0/job-1"]]])
        self.assertRaises(rpcdefs.RpcArgumentError, check, [[["job-1"]]])

    def test_delay_bounds(self):
        check = rpcdefs.CALLS["test_delay"].check_args
        check([0.5])
        self.assertRaises(rpcdefs.RpcArgumentError, check, [-1])
        self.assertRaises(rpcdefs.RpcArgumentError, check, [False])


class WireTest(SynchronousTestCase):
    def test_request_and_reply(self):
        call = rpcdefs.CALLS["test_delay"]
        self.assertEqual(rpcdefs.encode_request(call, [1]), b"[1]")
        reply = rpcdefs.encode_reply(True, constants.PROTOCOL_VERSION)
        self.assertEqual(rpcdefs.decode_reply(reply), (True, constants.PROTOCOL_VERSION))
        self.assertEqual(rpcdefs.decode_reply(b'[false, "boom"]'), (False, "boom"))
        for bad in [b"", b"{}", b"[1, 2]", b"\xff", b"[true]"]:
            self.assertRaises(rpcdefs.RpcReplyError, rpcdefs.decode_reply, bad)

    def test_content(self):
        for data in [b"abc\x00\xff", "text"]:
            for compress in (False, True):
                enc = rpcdefs.encode_content(data, compress=compress)
                expected = data if isinstance(data, bytes) else data.encode()
                self.assertEqual(rpcdefs.decode_content(enc), expected)
        self.assertEqual(rpcdefs.decode_content("plain"), b"plain")
        self.assertRaises(rpcdefs.RpcArgumentError, rpcdefs.decode_content, [1, "!!"])

    def test_paths(self):
        self.assertEqual(rpcdefs.to_wire_path("/r/n1", "/r/n1/var/lib/ganeti/x"),
                         "/var/lib/ganeti/x")
        self.assertEqual(rpcdefs.to_wire_path("", "/var/x"), "/var/x")
        self.assertEqual(rpcdefs.to_wire_path("/r/n1", "/r/n10/x"), "/r/n10/x")
        self.assertEqual(rpcdefs.from_wire_path("/r/n1", "/var/x"), "/r/n1/var/x")

"""Hypervisor parameter syntax checks of ``gnt-cluster modify -H`` (Ganeti's
CheckParameterSyntax), found by the side-by-side oracle (case
cluster-modify-hvparams-bad-value)."""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core.errors import HypervisorError, TypeEnforcementError
from ganeti.core.opcodes import table
from ganeti.core.params_cluster import compute_cluster_change, os_hvp_echo
from tests.master.test_jobqueue import small_config


def _op(**params):
    return table.OP_CLUSTER_SET_PARAMS.validate({"OP_ID": "OP_CLUSTER_SET_PARAMS", **params})


class MigrationModeTest(SynchronousTestCase):
    def test_bad_migration_mode_is_refused_with_ganetis_words(self):
        cfg = small_config()
        with self.assertRaises(HypervisorError) as caught:
            compute_cluster_change(cfg, _op(hvparams={"fake": {"migration_mode": "sideways"}}))
        self.assertEqual(str(caught.exception.args[0]),
                         "Parameter 'migration_mode' fails syntax check: invalid migration "
                         "mode (current value: 'sideways')")
        self.assertEqual(cfg.cluster.hvparams.get("fake", {}).get("migration_mode", "live"),
                         "live")

    def test_both_modes_are_accepted(self):
        for mode in ("live", "non-live"):
            change = compute_cluster_change(small_config(), _op(
                hvparams={"fake": {"migration_mode": mode}}))
            self.assertEqual(change.cluster.hvparams["fake"]["migration_mode"], mode)


class OsHypervisorParametersTest(SynchronousTestCase):
    """``gnt-os modify -H HV:...`` (issue 34): every hypervisor Ganeti knows, enabled or
    not, checked against its own table (Ganeti's QA TestOsModifyValid/Invalid)."""

    def test_parameters_of_hypervisors_not_enabled_are_accepted(self):
        cfg = small_config()
        self.assertNotIn("xen-pvm", cfg.cluster.enabled_hypervisors)
        change = compute_cluster_change(cfg, _op(os_hvp={"noop": {
            "xen-pvm": {"root_path": "/dev/sda5"},
            "xen-hvm": {"acpi": False, "pae": True}}}))
        self.assertEqual(change.cluster.os_hvp["noop"], {
            "xen-pvm": {"root_path": "/dev/sda5"}, "xen-hvm": {"acpi": False, "pae": True}})
        # the nodes check them filled with the cluster's defaults (kernel_path, ...)
        checks = dict(change.hv_checks)
        self.assertEqual(checks["xen-pvm"]["root_path"], "/dev/sda5")
        self.assertEqual(checks["xen-pvm"]["kernel_path"], "/boot/vmlinuz-3-xenU")
        self.assertEqual((checks["xen-hvm"]["acpi"], checks["xen-hvm"]["boot_order"]),
                         (False, "cd"))
        change = compute_cluster_change(cfg, _op(os_hvp={"noop": {
            "lxc": {"num_ttys": 2}, "chroot": {"init_script": "/sbin/init"}}}))
        self.assertEqual(change.cluster.os_hvp["noop"]["lxc"], {"num_ttys": 2})

    def test_values_are_checked_against_that_hypervisors_table(self):
        for hv, values, message in (
                ("xen-hvm", {"boot_order": "zz"}, "Parameter 'boot_order' fails syntax "
                 "check: Invalid boot order specified, must be one or more of [acdn] "
                 "(current value: 'zz')"),
                ("lxc", {"num_ttys": -1}, "Parameter 'num_ttys' fails syntax check: cannot "
                 "be negative (current value: '-1')"),
                ("xen-pvm", {"kernel_path": "rel"}, "Parameter 'kernel_path' fails syntax "
                 "check: must be an absolute normalized path (current value: 'rel')"),
                ("xen-pvm", {"pae": True}, "Parameter 'pae' is not supported")):
            cfg = small_config()
            with self.assertRaises(HypervisorError) as caught:
                compute_cluster_change(cfg, _op(os_hvp={"noop": {hv: values}}))
            self.assertEqual(str(caught.exception.args[0]), message)
            self.assertEqual(cfg.cluster.os_hvp, {})
        with self.assertRaises(TypeEnforcementError):  # no hypervisor has it
            compute_cluster_change(small_config(), _op(os_hvp={"noop": {"xen-pvm": {
                "nope": "1"}}}))

    def test_cluster_parameters_of_a_hypervisor_not_enabled(self):
        change = compute_cluster_change(small_config(), _op(
            hvparams={"xen-pvm": {"root_path": "/dev/sda5"}}))
        stored = change.cluster.hvparams["xen-pvm"]
        self.assertEqual((stored["root_path"], stored["xen_cmd"]), ("/dev/sda5", "xm"))
        with self.assertRaises(HypervisorError):
            compute_cluster_change(small_config(), _op(hvparams={"xen-hvm": {"nic_type": "x"}}))

    def test_unknown_hypervisor_is_refused_by_the_unit(self):
        # as Ganeti: luxid takes any name, the unit checks the types, then the name
        with self.assertRaises(TypeEnforcementError) as caught:
            compute_cluster_change(small_config(), _op(os_hvp={"noop": {
                "blahblahblubb": {"bar": ""}}}))
        self.assertEqual(caught.exception.args[0], "Unknown parameter 'bar'")
        with self.assertRaises(HypervisorError) as caught:
            compute_cluster_change(small_config(), _op(os_hvp={"noop": {
                "blahblahblubb": {"acpi": True}}}))
        self.assertEqual(caught.exception.args[0], "Unknown hypervisor type 'blahblahblubb'")


class OsHvpEchoTest(SynchronousTestCase):
    """What Ganeti's unit leaves of ``os_hvp`` in the job's opcode (oracle case
    rapi-jobs-bulk after the gnt-os modify -H cases)."""

    def test_new_entries_are_typed_merged_ones_stay_as_given(self):
        old = {"noop": {"lxc": {"num_ttys": 2}}}
        given = {"noop": {"lxc": {"num_ttys": "3"}, "xen-hvm": {"acpi": "False"},
                          "chroot": None},
                 "other": {"xen-hvm": {"pae": "True"}}}
        echo = os_hvp_echo(old, given)
        self.assertEqual(echo, {"noop": {"lxc": {"num_ttys": "3"},
                                         "xen-hvm": {"acpi": False}, "chroot": None},
                                "other": {"xen-hvm": {"pae": True}}})
        self.assertEqual(given["noop"]["xen-hvm"], {"acpi": "False"})  # not changed

    def test_a_value_that_cannot_be_typed_is_left_as_given(self):
        given = {"noop": {"lxc": {"num_ttys": "many"}}}
        self.assertEqual(os_hvp_echo({}, given), given)

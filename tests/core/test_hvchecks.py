"""The master's hypervisor parameter syntax checks (Ganeti's CheckParameterSyntax)."""

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import constants as c
from ganeti.core import hvchecks
from ganeti.core.errors import ECODE_INVAL, OpPrereqError


def kvm(**overrides):
    params = dict(c.HVC_DEFAULTS[c.HT_KVM])
    params.update(overrides)
    return params


class KvmSyntaxTest(SynchronousTestCase):
    def refused(self, hypervisor, params, name, needle=""):
        err = self.assertRaises(OpPrereqError, hvchecks.check_syntax, hypervisor, params)
        message, code = err.args
        self.assertEqual(code, ECODE_INVAL)
        self.assertIn(f"Parameter '{name}'", message)
        self.assertIn(needle, message)
        return message

    def test_defaults_pass(self):
        for hv, defaults in c.HVC_DEFAULTS.items():
            hvchecks.check_syntax(hv, dict(defaults))

    def test_good_values_pass(self):
        good = [
            {"boot_order": "cdrom", "cdrom_image_path": "/srv/iso/debian.iso"},
            {"boot_order": "network"}, {"nic_type": "e1000"}, {"disk_type": "scsi"},
            {"disk_cache": "writeback"}, {"serial_speed": 115200},
            {"serial_console": False, "serial_speed": 12345},
            {"usb_mouse": "tablet"}, {"usb_mouse": ""}, {"mem_path": ""},
            {"cpu_mask": "0-2,5:all:1"}, {"cpu_mask": "3"},
            {"vnc_bind_address": "0.0.0.0"}, {"vnc_bind_address": "::1"},
            {"vnc_bind_address": "br0"}, {"vnc_bind_address": "/run/vnc.sock"},
            {"vnc_bind_address": "127.0.0.1", "vnc_tls": False},
            {"security_model": "user", "security_domain": "kvmuser"},
            {"kernel_path": "/boot/vmlinuz", "initrd_path": "/boot/initrd.img"},
            {"cdrom_image_path": "http://example.com/x.iso"},
            {"security_model": "pool"}, {"cpu_cores": 2, "cpu_threads": 0, "cpu_sockets": 1},
            {"migration_port": 1}, {"migration_port": 65534}, {"migration_downtime": 0},
            {"reboot_behavior": "exit"}, {"kvm_flag": "disabled"}, {"migration_mode": "non-live"},
            {"vnc_password_file": "/etc/ganeti/vnc-cluster-password"},
        ]
        for overrides in good:
            hvchecks.check_syntax(c.HT_KVM, kvm(**overrides))

    def test_bad_values_are_refused_naming_the_parameter(self):
        bad = [
            ({"boot_order": "usb"}, "boot_order", "The value must be one of: cdrom, disk"),
            ({"boot_order": ""}, "boot_order", "is required but is currently not defined"),
            ({"nic_type": "virtio"}, "nic_type", "(current value: 'virtio')"),
            ({"disk_type": "nvme"}, "disk_type", "fails syntax check"),
            ({"disk_cache": "unsafe"}, "disk_cache", "fails syntax check"),
            ({"security_model": "root"}, "security_model", "fails syntax check"),
            ({"usb_mouse": "trackball"}, "usb_mouse", "fails syntax check"),
            ({"reboot_behavior": "halt"}, "reboot_behavior", "fails syntax check"),
            ({"kvm_flag": "maybe"}, "kvm_flag", "fails syntax check"),
            ({"migration_mode": "teleport"}, "migration_mode", "invalid migration mode"),
            ({"migration_port": 0}, "migration_port", "invalid port number"),
            ({"migration_port": 65535}, "migration_port", "invalid port number"),
            ({"migration_bandwidth": -1}, "migration_bandwidth", "cannot be negative"),
            ({"cpu_cores": -1}, "cpu_cores", "cannot be negative"),
            ({"cpu_threads": -2}, "cpu_threads", "cannot be negative"),
            ({"cpu_sockets": -3}, "cpu_sockets", "cannot be negative"),
            ({"cpu_mask": "0-x"}, "cpu_mask", "Multiple CPU mask definition is not "
                                              "well-formed"),
            ({"cpu_mask": "3-1"}, "cpu_mask", "not well-formed"),
            ({"cpu_mask": "1,,2"}, "cpu_mask", "not well-formed"),
            ({"kernel_path": "boot/vmlinuz"}, "kernel_path",
             "must be an absolute normalized path"),
            ({"kernel_path": "/boot/../vmlinuz"}, "kernel_path", "absolute normalized"),
            ({"initrd_path": "initrd"}, "initrd_path", "absolute normalized"),
            ({"mem_path": "hugepages"}, "mem_path", "absolute normalized"),
            ({"vnc_password_file": "pw"}, "vnc_password_file", "absolute normalized"),
            ({"cdrom_image_path": "debian.iso"}, "cdrom_image_path", "path or a URL"),
            ({"serial_speed": 12345}, "serial_speed", "Invalid serial console speed"),
            ({"boot_order": "cdrom"}, "boot_order", "Cannot boot from cdrom without an ISO "
                                                    "path"),
            ({"kernel_path": "/boot/vmlinuz", "root_path": ""}, "root_path",
             "Need a root partition"),
            ({"security_model": "user"}, "security_domain",
             "A security domain (user to run kvm as) must be specified"),
            ({"security_model": "none", "security_domain": "kvm"}, "security_domain",
             "Cannot have a security domain when the security model is 'none' or 'pool'"),
            ({"security_model": "pool", "security_domain": "kvm"}, "security_domain",
             "Cannot have a security domain"),
            ({"vnc_tls": True}, "vnc_tls", "needs vnc_bind_address"),
            ({"vnc_bind_address": "not an address!"}, "vnc_bind_address",
             "must be either a valid IP address, an interface name, or an absolute path"),
            ({"vnc_bind_address": "a-very-long-interface-name"}, "vnc_bind_address",
             "valid IP address"),
        ]
        for overrides, name, needle in bad:
            self.refused(c.HT_KVM, kvm(**overrides), name, needle)

    def test_spice_dependencies_and_extended_parameters(self):
        # parameters of Ganeti's kvm this project does not declare are checked when present
        self.refused(c.HT_KVM, kvm(spice_bind="", spice_use_tls=True), "spice_use_tls",
                     "SPICE: spice_use_tls requires spice_bind to be set")
        self.refused(c.HT_KVM, kvm(spice_bind="10.0.0.1", spice_ip_version=6),
                     "spice_ip_version", "Got an IPv4 address (10.0.0.1)")
        self.refused(c.HT_KVM, kvm(spice_bind="::1", spice_ip_version=4),
                     "spice_ip_version", "Got an IPv6 address")
        self.refused(c.HT_KVM, kvm(spice_bind="::1", spice_ip_version=6), "spice_bind",
                     "SPICE is not supported through libvirt")
        self.refused(c.HT_KVM, kvm(spice_ip_version=5, spice_bind="x"), "spice_ip_version",
                     "The SPICE IP version should be 4 or 6")
        self.refused(c.HT_KVM, kvm(disk_aio="native", disk_cache="writeback"), "disk_aio",
                     "the only supported value for 'disk_cache' is 'none'")
        hvchecks.check_syntax(c.HT_KVM, kvm(disk_aio="native", disk_cache="none"))
        self.refused(c.HT_KVM, kvm(vnc_x509_verify=True), "vnc_x509_verify",
                     "vnc_x509_path must be defined")
        self.refused(c.HT_KVM, kvm(kvm_path=""), "kvm_path", "is required")
        self.refused(c.HT_KVM, kvm(virtio_net_queues=9), "virtio_net_queues",
                     "invalid number of queues")

    def test_what_libvirt_cannot_honour_is_refused_by_name(self):
        for overrides, name in (({"disk_type": "scsi-hd"}, "disk_type"),
                                ({"disk_type": "mtd"}, "disk_type"),
                                ({"nic_type": "i82557b"}, "nic_type"),
                                ({"mem_path": "/hugepages"}, "mem_path"),
                                ({"kvm_extra": "-no-hpet"}, "kvm_extra"),
                                ({"vnc_bind_address": "127.0.0.1", "vnc_tls": True},
                                 "vnc_tls")):
            self.refused(c.HT_KVM, kvm(**overrides), name, "")

    def test_other_hypervisors(self):
        hvchecks.check_syntax(c.HT_FAKE, {"migration_mode": "live"})
        self.refused(c.HT_FAKE, {"migration_mode": "fast"}, "migration_mode",
                     "Parameter 'migration_mode' fails syntax check: invalid migration mode "
                     "(current value: 'fast')")
        hvchecks.check_syntax(c.HT_XEN_HVM, {"boot_order": "cd", "vnc_bind_address": "0.0.0.0"})
        self.refused(c.HT_XEN_HVM, {"boot_order": "cx"}, "boot_order", "[acdn]")
        self.refused(c.HT_XEN_HVM, {"vnc_bind_address": "br0"}, "vnc_bind_address",
                     "VNC bind address is not a valid IP address")
        self.refused(c.HT_XEN_HVM, {"vnc_password_file": ""}, "vnc_password_file",
                     "is required")
        self.refused(c.HT_XEN_PVM, {"xen_cmd": "xe"}, "xen_cmd", "one of: xl, xm")
        self.refused(c.HT_XEN_PVM, {"cpu_weight": 0}, "cpu_weight", "invalid weight")
        self.refused(c.HT_LXC, {"cpu_mask": "0:1"}, "cpu_mask",
                     "CPU mask definition is not well-formed")
        self.refused(c.HT_CHROOT, {"init_script": "init"}, "init_script", "absolute")

    def test_cpu_masks(self):
        self.assertEqual(hvchecks.parse_cpu_mask("0-2,5"), [0, 1, 2, 5])
        self.assertTrue(hvchecks.is_multi_cpu_mask("all"))
        self.assertTrue(hvchecks.is_multi_cpu_mask("0-1:all:3"))
        self.assertFalse(hvchecks.is_cpu_mask(""))
        self.assertFalse(hvchecks.is_multi_cpu_mask("1-2-3"))

    def test_node_checks_and_vnc_files(self):
        checks = hvchecks.node_checks(c.HT_KVM)
        self.assertEqual(checks["kernel_path"], hvchecks.NODE_FILE)
        self.assertEqual(checks["mem_path"], hvchecks.NODE_DIR)
        self.assertEqual(checks["vnc_password_file"], hvchecks.NODE_FILE)
        self.assertEqual(hvchecks.node_checks(c.HT_FAKE), {})
        self.assertTrue(hvchecks.needs_node_validation(c.HT_KVM))
        self.assertFalse(hvchecks.needs_node_validation(c.HT_FAKE))
        self.assertEqual(hvchecks.vnc_password_files(c.HT_KVM,
                                                     {"vnc_password_file": "/etc/pw"}),
                         ["/etc/pw"])
        self.assertEqual(hvchecks.vnc_password_files(c.HT_KVM, {"vnc_password_file": ""}), [])
        self.assertEqual(hvchecks.vnc_password_files(c.HT_FAKE,
                                                     {"vnc_password_file": "/etc/pw"}), [])

"""libvirt domain XML from Ganeti's kvm parameters (pure mapping, no libvirt)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import constants as c
from ganeti.noded.hypervisors import domainxml as dx

UUID = "8d3e6f2a-6a0c-4d3e-9c7b-0a1b2c3d4e5f"


def spec(**hv):
    params = dict(c.HVC_DEFAULTS[c.HT_KVM])
    params.update(hv)
    return dx.DomainSpec(name="web1.example.com", uuid=UUID, hvparams=params, memory_mib=256,
                         vcpus=2, disks=[dx.DiskSpec("/srv/ganeti/file-storage/web1/disk0")],
                         nics=[dx.NicSpec("aa:00:00:11:22:33", bridge="br0")])


def parse(s):
    return ET.fromstring(dx.domain_xml(s))


class DomainXmlTest(SynchronousTestCase):
    def test_defaults_boot_from_the_first_disk_under_tcg(self):
        dom = parse(spec())
        self.assertEqual(dom.get("type"), "qemu")
        self.assertEqual(dom.findtext("name"), "web1.example.com")
        self.assertEqual(dom.findtext("uuid"), UUID)
        self.assertEqual((dom.findtext("memory"), dom.find("memory").get("unit")),
                         ("256", "MiB"))
        self.assertEqual(dom.findtext("vcpu"), "2")
        self.assertIsNone(dom.find("vcpu").get("cpuset"))
        self.assertEqual(dom.find("os/boot").get("dev"), "hd")
        self.assertIsNone(dom.find("os/kernel"))
        disk = dom.find("devices/disk")
        self.assertEqual(disk.find("source").get("file"), "/srv/ganeti/file-storage/web1/disk0")
        self.assertEqual((disk.find("target").get("dev"), disk.find("target").get("bus")),
                         ("vda", "virtio"))
        self.assertIsNone(disk.find("driver").get("cache"))  # disk_cache=default
        nic = dom.find("devices/interface")
        self.assertEqual(nic.get("type"), "bridge")
        self.assertEqual(nic.find("source").get("bridge"), "br0")
        self.assertEqual(nic.find("mac").get("address"), "aa:00:00:11:22:33")
        self.assertEqual(nic.find("model").get("type"), "virtio")
        self.assertIsNotNone(dom.find("devices/serial"))
        self.assertEqual(dom.find("devices/console/target").get("type"), "serial")
        self.assertIsNotNone(dom.find("features/acpi"))
        self.assertIsNone(dom.find("devices/graphics"))
        self.assertIsNone(dom.find("seclabel"))

    def test_direct_kernel_boot_on_kvm(self):
        s = spec(kernel_path="/srv/guest/vmlinux", initrd_path="/srv/guest/initrd.img",
                 kernel_args="ro quiet", serial_speed=115200)
        dom = ET.fromstring(dx.domain_xml(dx.DomainSpec(**{**s.__dict__, "accel": "kvm"})))
        self.assertEqual(dom.get("type"), "kvm")
        self.assertEqual(dom.findtext("os/kernel"), "/srv/guest/vmlinux")
        self.assertEqual(dom.findtext("os/initrd"), "/srv/guest/initrd.img")
        self.assertEqual(dom.findtext("os/cmdline"),
                         "root=/dev/vda1 ro quiet console=ttyS0,115200")
        self.assertIsNone(dom.find("os/boot"))

    def test_cpu_topology_mask_and_model(self):
        dom = parse(spec(cpu_cores=2, cpu_mask="0-1", cpu_type="qemu64"))
        self.assertEqual(dom.find("vcpu").get("cpuset"), "0-1")
        topo = dom.find("cpu/topology")
        self.assertEqual((topo.get("sockets"), topo.get("cores"), topo.get("threads")),
                         ("1", "2", "1"))
        self.assertEqual(dom.findtext("cpu/model"), "qemu64")
        with self.assertRaises(dx.UnsupportedParameter) as cm:
            dx.domain_xml(spec(cpu_cores=3))
        self.assertEqual(cm.exception.param, "cpu_sockets")
        with self.assertRaises(dx.UnsupportedParameter) as cm:
            dx.domain_xml(spec(cpu_mask="0:1:2"))  # three masks, two vCPUs
        self.assertEqual(cm.exception.param, "cpu_mask")
        dom = parse(spec(cpu_mask="all:3-4"))  # per vCPU
        self.assertIsNone(dom.find("vcpu").get("cpuset"))
        self.assertEqual([p.attrib for p in dom.findall("cputune/vcpupin")],
                         [{"vcpu": "1", "cpuset": "3-4"}])

    def test_volume_range_cache_vnc_uid_and_tap(self):
        s = dx.DomainSpec(name="db1", uuid=UUID, hvparams={**c.HVC_DEFAULTS[c.HT_KVM],
                                                           "disk_cache": "none",
                                                           "vnc_bind_address": "0.0.0.0",
                                                           "disk_type": "scsi",
                                                           "nic_type": "e1000"},
                          memory_mib=128, vcpus=1,
                          disks=[dx.DiskSpec("/dev/loop3", block=True, offset=1048576,
                                             size=268435456)],
                          nics=[dx.NicSpec("aa:00:00:00:00:01", tap="gnt.db1.0")],
                          vnc_port=11001, uid=4001)
        dom = ET.fromstring(dx.domain_xml(s))
        disk = dom.find("devices/disk")
        self.assertEqual(disk.get("type"), "block")
        self.assertEqual(disk.find("source").get("dev"), "/dev/loop3")
        piece = disk.find("source/slices/slice")
        self.assertEqual((piece.get("offset"), piece.get("size")), ("1048576", "268435456"))
        self.assertEqual(disk.find("driver").get("cache"), "none")
        self.assertEqual(disk.find("target").get("dev"), "sda")
        nic = dom.find("devices/interface")
        self.assertEqual((nic.get("type"), nic.find("target").get("dev")),
                         ("ethernet", "gnt.db1.0"))
        self.assertEqual(nic.find("model").get("type"), "e1000")
        graphics = dom.find("devices/graphics")
        self.assertEqual((graphics.get("port"), graphics.get("listen")), ("11001", "0.0.0.0"))
        self.assertEqual(dom.findtext("seclabel/label"), "+4001:+4001")

    def test_what_cannot_be_honoured_is_named(self):
        for params, name in (({"mem_path": "/hugepages"}, "mem_path"),
                             ({"kvm_extra": "-no-hpet"}, "kvm_extra"),
                             ({"disk_type": "mtd"}, "disk_type"),
                             ({"nic_type": "bogus"}, "nic_type"),
                             ({"boot_order": "usb"}, "boot_order"),
                             ({"vnc_bind_address": "0.0.0.0", "vnc_tls": True}, "vnc_tls")):
            s = spec(**params)
            if name == "vnc_tls":
                s = dx.DomainSpec(**{**s.__dict__, "vnc_port": 11000})
            with self.assertRaises(dx.UnsupportedParameter, msg=name) as cm:
                dx.domain_xml(s)
            self.assertEqual(cm.exception.param, name)
            self.assertIn(f"'{name}'", str(cm.exception))

    def test_the_master_allows_only_what_the_mapping_has(self):
        from ganeti.core import hvchecks
        for value in hvchecks.KVM_LIBVIRT_DISK_TYPES:
            self.assertIsNotNone(dx.DISK_BUSES[value], value)
        for value in hvchecks.KVM_LIBVIRT_NIC_TYPES:
            self.assertIn(value, dx.NIC_MODELS)
        for value in set(hvchecks.KVM_DISK_TYPES) - set(hvchecks.KVM_LIBVIRT_DISK_TYPES):
            with self.assertRaises(dx.UnsupportedParameter):
                dx.domain_xml(spec(disk_type=value))
        for value in set(hvchecks.KVM_NIC_TYPES) - set(hvchecks.KVM_LIBVIRT_NIC_TYPES):
            with self.assertRaises(dx.UnsupportedParameter):
                dx.domain_xml(spec(nic_type=value))

    def test_every_kvm_parameter_is_mapped_or_ignored(self):
        self.assertEqual(dx.MAPPED | dx.IGNORED, set(c.HVC_DEFAULTS[c.HT_KVM]))
        self.assertFalse(dx.MAPPED & dx.IGNORED)


class ConsoleAndMetadataTest(SynchronousTestCase):
    def test_serial_console_on_a_unix_socket_with_a_log(self):
        s = dx.DomainSpec(**{**spec().__dict__, "serial_socket": "/run/ganeti/kvm/ctrl/a.serial",
                             "serial_log": "/run/ganeti/kvm/console/a.log"})
        dom = parse(s)
        serial = dom.find("devices/serial")
        self.assertEqual(serial.get("type"), "unix")
        self.assertEqual(serial.find("source").attrib,
                         {"mode": "bind", "path": "/run/ganeti/kvm/ctrl/a.serial"})
        self.assertEqual(serial.find("log").attrib,
                         {"file": "/run/ganeti/kvm/console/a.log", "append": "off"})
        console = dom.find("devices/console")
        self.assertEqual(console.get("type"), "unix")
        self.assertEqual(console.find("source").get("path"), "/run/ganeti/kvm/ctrl/a.serial")

    def test_kernel_args_with_a_console_keep_theirs(self):
        dom = parse(spec(kernel_path="/srv/guest/vmlinux", root_path="/dev/vda",
                         kernel_args="console=ttyS0,115200"))
        self.assertEqual(dom.findtext("os/cmdline"), "root=/dev/vda console=ttyS0,115200")

    def test_metadata_round_trip(self):
        s = dx.DomainSpec(**{**spec().__dict__, "metadata": {"name": "web1", "uid": "4000"}})
        xml = dx.domain_xml(s)
        self.assertEqual(dx.read_metadata(xml), {"name": "web1", "uid": "4000"})
        self.assertIsNone(dx.read_metadata(dx.domain_xml(spec())))
        self.assertIsNone(dx.read_metadata("<domain"))

    def test_pool_uid_is_a_static_dac_label(self):
        dom = parse(dx.DomainSpec(**{**spec().__dict__, "uid": 4001}))
        self.assertEqual(dom.find("seclabel").get("model"), "dac")
        self.assertEqual(dom.findtext("seclabel/label"), "+4001:+4001")

    def test_vnc_password(self):
        s = dx.DomainSpec(**{**spec(vnc_bind_address="0.0.0.0",
                                    vnc_password_file="/etc/ganeti/vnc-cluster-password"
                                    ).__dict__, "vnc_port": 11000, "vnc_password": "s3cret"})
        self.assertEqual(parse(s).find("devices/graphics").get("passwd"), "s3cret")

    def test_mirrored_disk_is_the_nodes_nbd_export(self):
        s = dx.DomainSpec(**{**spec().__dict__, "disks": [
            dx.DiskSpec("disk", nbd=("10.77.0.10", 11005)),
            dx.DiskSpec("/dev/loop1", block=True)]})
        disks = parse(s).findall("devices/disk")
        self.assertEqual((disks[0].get("type"), disks[1].get("type")), ("network", "block"))
        source = disks[0].find("source")
        self.assertEqual((source.get("protocol"), source.get("name")), ("nbd", "disk"))
        host = source.find("host")
        self.assertEqual((host.get("name"), host.get("port")), ("10.77.0.10", "11005"))
        self.assertIsNone(source.get("file"))
        self.assertEqual(disks[0].find("driver").get("type"), "raw")
        self.assertEqual(disks[0].find("target").get("dev"), "vda")

    def test_migration_moves_nbd_hosts_to_the_destinations_daemon(self):
        from ganeti.noded.hypervisors.kvmmigration import nbd_moves
        s = dx.DomainSpec(**{**spec().__dict__, "disks": [
            dx.DiskSpec("disk", nbd=("10.77.0.1", 21005)),
            dx.DiskSpec("disk", nbd=("10.77.0.1", 21006)),
            dx.DiskSpec("/dev/loop1", block=True)]})
        xml = dx.domain_xml(s)
        # the guests a resync's last round suspends: those whose disk is the export
        self.assertEqual(dx.nbd_disks(xml, "10.77.0.1", 21006), ["vdb"])
        self.assertEqual(dx.nbd_disks(xml, "10.77.0.2", 21006), [])
        self.assertEqual(dx.disk_targets(xml, "/dev/loop1"), ["vdc"])
        moved = dx.moved_nbd_hosts(xml, {("10.77.0.1", 21005): "10.77.0.2"})
        hosts = [(h.get("name"), h.get("port"))
                 for h in ET.fromstring(moved).findall("devices/disk/source/host")]
        self.assertEqual(hosts, [("10.77.0.2", "21005"), ("10.77.0.1", "21006")])
        self.assertEqual(dx.read_metadata(moved), dx.read_metadata(xml))  # still ours
        self.assertIsNone(dx.moved_nbd_hosts(xml, {("10.77.0.9", 21005): "10.77.0.2"}))
        # the moves come from the source's disks_info: its drbd disks of the qemu engine
        drbd = {"dev_type": "drbd", "logical_id": ["n1", "n2", 11005, 0, 0, "s"],
                "dynamic_params": {"mirror": "qemu", "local-ip": "10.77.0.1",
                                   "remote-ip": "10.77.0.2"}}
        emulated = {**drbd, "dynamic_params": {**drbd["dynamic_params"],
                                               "mirror": "emulated"}}
        self.assertEqual(nbd_moves({"disks_info": [drbd, emulated, {"dev_type": "file"}]}),
                         {("10.77.0.1", 21005): "10.77.0.2"})

"""The fields of query resource "instance" (``gnt-instance list-fields``).

Names, titles, kinds and descriptions are those Ganeti 3.0's luxid answers
(``tests/data/instance-fields-3.0.json`` holds its answer, and a test keeps
this table equal to it).  Fields marked ``live`` need the nodes'
``all_instances_info`` answer (the instance's runtime state); the others come
from the config.

Aliases (``vcpus``, ``be/memory``, ``sda_size``, ``ip``, ...) are fields of
their own with the definition of the field they stand for, except the name:
as in Ganeti, they share its title.
"""

from __future__ import annotations

from typing import Any

from ganeti.core import constants as c
from ganeti.core.queryfields.base import FieldDecl, decl_table
from ganeti.core.queryfields.nodes import OBJECT, STRING_LIST, common_fields

#: Ganeti's limits on disks and NICs of an instance (one numbered field per index).
MAX_DISKS = 16
MAX_NICS = 8

#: Every hypervisor parameter Ganeti 3.0 knows, by the query kind of its value
#: (Ganeti's ``HVS_PARAMETER_TYPES``: bool -> bool, int -> number, strings -> other),
#: the cluster-wide ones (``HVC_GLOBALS``) left out as Ganeti leaves them out.
_HV_BOOL = ("acpi pae serial_console spice_playback_compression spice_use_tls "
            "spice_use_vdagent use_bootloader use_chroot use_guest_agent use_localtime "
            "user_shutdown vhost_net viridian vnc_tls vnc_x509_verify vnet_hdr")
_HV_NUMBER = ("cpu_cap cpu_cores cpu_sockets cpu_threads cpu_weight kvm_pci_reservations "
              "migration_downtime num_ttys serial_speed spice_ip_version startup_timeout "
              "virtio_net_queues")
_HV_OTHER = ("blockdev_prefix boot_order bootloader_args bootloader_path cdrom2_image_path "
             "cdrom_disk_type cdrom_image_path cpu_mask cpu_type cpuid device_model devices "
             "disk_aio disk_cache disk_discard disk_type drop_capabilities extra_cgroups "
             "extra_config floppy_image_path init_script initrd_path kernel_args kernel_path "
             "keymap kvm_extra kvm_flag kvm_path machine_version mem_path migration_caps "
             "nic_type pci_pass reboot_behavior root_path scsi_controller_type "
             "security_domain security_model soundhw spice_bind spice_image_compression "
             "spice_jpeg_wan_compression spice_password_file spice_streaming_video "
             "spice_tls_ciphers spice_zlib_glz_wan_compression usb_devices usb_mouse vga "
             "vif_script vif_type vnc_bind_address vnc_password_file vnc_x509_path")
HV_PARAMETER_KINDS: dict[str, str] = {
    **{name: c.QFT_BOOL for name in _HV_BOOL.split()},
    **{name: c.QFT_NUMBER for name in _HV_NUMBER.split()},
    **{name: c.QFT_OTHER for name in _HV_OTHER.split()},
}
#: Ganeti's titles of some parameters (``HVS_PARAMETER_TITLES``); the rest are "hv/<name>".
HV_PARAMETER_TITLES = {
    "acpi": "ACPI", "boot_order": "Boot_order", "cdrom_image_path": "CDROM_image_path",
    "cpu_type": "cpu_type", "disk_type": "Disk_type", "initrd_path": "Initrd_path",
    "kernel_path": "Kernel_path", "nic_type": "NIC_type", "pae": "PAE",
    "pci_pass": "pci_pass", "vnc_bind_address": "VNC_bind_address",
}
#: Backend parameters: kind and title (Ganeti's ``BES_PARAMETER_TITLES``).
BE_PARAMETERS: dict[str, tuple[str, str]] = {
    c.BE_ALWAYS_FAILOVER: (c.QFT_BOOL, "be/always_failover"),
    c.BE_AUTO_BALANCE: (c.QFT_BOOL, "Auto_balance"),
    c.BE_MAXMEM: (c.QFT_UNIT, "ConfigMaxMem"),
    c.BE_MINMEM: (c.QFT_UNIT, "ConfigMinMem"),
    c.BE_SPINDLE_USE: (c.QFT_NUMBER, "be/spindle_use"),
    c.BE_VCPUS: (c.QFT_NUMBER, "ConfigVCPUs"),
}

#: Instance states the ``status`` field answers (Ganeti's ``INSTST_*``).
INSTST_RUNNING = "running"
INSTST_ADMINDOWN = "ADMIN_down"
INSTST_ADMINOFFLINE = "ADMIN_offline"
INSTST_NODEOFFLINE = "ERROR_nodeoffline"
INSTST_NODEDOWN = "ERROR_nodedown"
INSTST_WRONGNODE = "ERROR_wrongnode"
INSTST_ERRORUP = "ERROR_up"
INSTST_ERRORDOWN = "ERROR_down"
INSTST_USERDOWN = "USER_down"
INSTST_ALL = (INSTST_RUNNING, INSTST_ADMINDOWN, INSTST_WRONGNODE, INSTST_ERRORUP,
              INSTST_ERRORDOWN, INSTST_NODEDOWN, INSTST_NODEOFFLINE, INSTST_ADMINOFFLINE,
              INSTST_USERDOWN)

_STATUS_DOC = (
    f'Instance status; "{INSTST_RUNNING}" if instance is set to be running and actually '
    f'is, "{INSTST_ADMINDOWN}" if instance is stopped and is not running, '
    f'"{INSTST_WRONGNODE}" if instance running, but not on its designated primary node, '
    f'"{INSTST_ERRORUP}" if instance should be stopped, but is actually running, '
    f'"{INSTST_ERRORDOWN}" if instance should run, but doesn\'t, "{INSTST_NODEDOWN}" if '
    f'instance\'s primary node is down, "{INSTST_NODEOFFLINE}" if instance\'s primary node '
    f'is marked offline, "{INSTST_ADMINOFFLINE}" if instance is offline and does not use '
    f'dynamic resources')

#: Legacy names and the fields they stand for.
ALIASES: dict[str, str] = {
    "vcpus": "be/vcpus", "be/memory": "be/maxmem", "sda_size": "disk.size/0",
    "sdb_size": "disk.size/1", "ip": "nic.ip/0", "mac": "nic.mac/0",
    "bridge": "nic.bridge/0", "nic_mode": "nic.mode/0", "nic_link": "nic.link/0",
    "nic_network": "nic.network/0",
}

NULLABLE_STRING_LIST: dict[str, Any] = {"type": "array",
                                        "items": {"type": "string", "nullable": True}}
NULLABLE_INT_LIST: dict[str, Any] = {"type": "array",
                                     "items": {"type": "integer", "nullable": True}}


def ordinal(number: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ..., ``11th``, ``21st`` (Ganeti's FormatOrdinal)."""
    if 10 < number % 100 < 20:
        return f"{number}th"
    return f"{number}" + {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")


def _simple() -> list[FieldDecl]:
    return [
        FieldDecl("admin_state", "InstanceState", c.QFT_TEXT, "Desired state of instance",
                  schema={"type": "string", "enum": sorted(c.ADMINST_ALL)}),
        FieldDecl("admin_state_source", "InstanceStateSource", c.QFT_TEXT,
                  "Who last changed the desired state of the instance"),
        FieldDecl("admin_up", "Autostart", c.QFT_BOOL, "Desired state of instance"),
        FieldDecl("disks_active", "DisksActive", c.QFT_BOOL, "Desired state of instance disks"),
        FieldDecl("name", "Instance", c.QFT_TEXT, "Instance name", hostname=True),
        FieldDecl("hypervisor", "Hypervisor", c.QFT_TEXT, "Hypervisor name"),
        FieldDecl("network_port", "Network_port", c.QFT_OTHER,
                  "Instance network port if available (e.g. for VNC console)",
                  schema={"type": "integer", "nullable": True}),
        FieldDecl("os", "OS", c.QFT_TEXT, "Operating system"),
        FieldDecl("pnode", "Primary_node", c.QFT_TEXT, "Primary node", hostname=True),
        FieldDecl("pnode.group", "PrimaryNodeGroup", c.QFT_TEXT, "Primary node's group"),
        FieldDecl("pnode.group.uuid", "PrimaryNodeGroupUUID", c.QFT_TEXT,
                  "Primary node's group UUID"),
        FieldDecl("snodes", "Secondary_Nodes", c.QFT_OTHER,
                  "Secondary nodes; usually this will just be one node", schema=STRING_LIST),
        FieldDecl("snodes.group", "SecondaryNodesGroups", c.QFT_OTHER,
                  "Node groups of secondary nodes", schema=STRING_LIST),
        FieldDecl("snodes.group.uuid", "SecondaryNodesGroupsUUID", c.QFT_OTHER,
                  "Node group UUIDs of secondary nodes", schema=STRING_LIST),
    ]


def _parameters() -> list[FieldDecl]:
    decls = [
        FieldDecl("hvparams", "HypervisorParameters", c.QFT_OTHER,
                  "Hypervisor parameters (merged)", schema=OBJECT),
        FieldDecl("beparams", "BackendParameters", c.QFT_OTHER, "Backend parameters (merged)",
                  schema=OBJECT),
        FieldDecl("osparams", "OpSysParameters", c.QFT_OTHER,
                  "Operating system parameters (merged)", schema=OBJECT),
        FieldDecl("custom_hvparams", "CustomHypervisorParameters", c.QFT_OTHER,
                  "Custom hypervisor parameters", schema=OBJECT),
        FieldDecl("custom_beparams", "CustomBackendParameters", c.QFT_OTHER,
                  "Custom backend parameters", schema=OBJECT),
        FieldDecl("custom_osparams", "CustomOpSysParameters", c.QFT_OTHER,
                  "Custom operating system parameters", schema=OBJECT),
        FieldDecl("custom_nicparams", "CustomNicParameters", c.QFT_OTHER,
                  "Custom network interface parameters",
                  schema={"type": "array", "items": OBJECT}),
    ]
    decls += [FieldDecl(f"be/{name}", title, kind, f"The \"{name}\" backend parameter")
              for name, (kind, title) in BE_PARAMETERS.items()]
    decls += [FieldDecl(f"hv/{name}", HV_PARAMETER_TITLES.get(name, f"hv/{name}"), kind,
                        f"The \"{name}\" hypervisor parameter")
              for name, kind in sorted(HV_PARAMETER_KINDS.items())]
    return decls


def _disks() -> list[FieldDecl]:
    decls = [
        FieldDecl("disk_usage", "DiskUsage", c.QFT_UNIT,
                  "Total disk space used by instance on each of its nodes; this is not the "
                  "disk size visible to the instance, but the usage on the node"),
        FieldDecl("disk.count", "Disks", c.QFT_NUMBER, "Number of disks"),
        FieldDecl("disk.sizes", "Disk_sizes", c.QFT_OTHER, "List of disk sizes",
                  schema=NULLABLE_INT_LIST),
        FieldDecl("disk.spindles", "Disk_spindles", c.QFT_OTHER, "List of disk spindles",
                  schema=NULLABLE_INT_LIST),
        FieldDecl("disk.names", "Disk_names", c.QFT_OTHER, "List of disk names",
                  schema=NULLABLE_STRING_LIST),
        FieldDecl("disk.uuids", "Disk_UUIDs", c.QFT_OTHER, "List of disk UUIDs",
                  schema=STRING_LIST),
        FieldDecl("disk_template", "Disk_template", c.QFT_TEXT, "Instance disk template"),
    ]
    for i in range(MAX_DISKS):
        nth = ordinal(i + 1)
        decls += [
            FieldDecl(f"disk.size/{i}", f"Disk/{i}", c.QFT_UNIT, f"Disk size of {nth} disk"),
            FieldDecl(f"disk.spindles/{i}", f"DiskSpindles/{i}", c.QFT_NUMBER,
                      f"Spindles of {nth} disk"),
            FieldDecl(f"disk.name/{i}", f"DiskName/{i}", c.QFT_TEXT, f"Name of {nth} disk"),
            FieldDecl(f"disk.uuid/{i}", f"DiskUUID/{i}", c.QFT_TEXT, f"UUID of {nth} disk"),
        ]
    return decls


def _nics() -> list[FieldDecl]:
    each = "List containing each network interface's "
    decls = [
        FieldDecl("nic.count", "NICs", c.QFT_NUMBER, "Number of network interfaces"),
        FieldDecl("nic.macs", "NIC_MACs", c.QFT_OTHER, each + "MAC address",
                  schema=STRING_LIST),
        FieldDecl("nic.ips", "NIC_IPs", c.QFT_OTHER, each + "IP address",
                  schema=NULLABLE_STRING_LIST),
        FieldDecl("nic.names", "NIC_Names", c.QFT_OTHER, each + "name",
                  schema=NULLABLE_STRING_LIST),
        FieldDecl("nic.uuids", "NIC_UUIDs", c.QFT_OTHER, each + "UUID", schema=STRING_LIST),
        FieldDecl("nic.modes", "NIC_modes", c.QFT_OTHER, each + "mode", schema=STRING_LIST),
        FieldDecl("nic.vlans", "NIC_VLANs", c.QFT_OTHER, each + "VLAN",
                  schema=NULLABLE_STRING_LIST),
        FieldDecl("nic.bridges", "NIC_bridges", c.QFT_OTHER, each + "bridge",
                  schema=NULLABLE_STRING_LIST),
        FieldDecl("nic.links", "NIC_links", c.QFT_OTHER, each + "link", schema=STRING_LIST),
        FieldDecl("nic.networks", "NIC_networks", c.QFT_OTHER,
                  "List containing each interface's network", schema=NULLABLE_STRING_LIST),
        FieldDecl("nic.networks.names", "NIC_networks_names", c.QFT_OTHER,
                  "List containing the name of each interface's network",
                  schema=NULLABLE_STRING_LIST),
    ]
    per_nic = (("ip", "NicIP", "IP address"), ("uuid", "NicUUID", "UUID address"),
               ("mac", "NicMAC", "MAC address"), ("name", "NicName", "Name address"),
               ("network", "NicNetwork", "Network"), ("mode", "NicMode", "Mode"),
               ("link", "NicLink", "Link"), ("vlan", "NicVLAN", "VLAN"),
               ("network.name", "NicNetworkName", "Network name"),
               ("bridge", "NicBridge", "Bridge"))
    for i in range(MAX_NICS):
        decls += [FieldDecl(f"nic.{key}/{i}", f"{title}/{i}", c.QFT_TEXT,
                            f"{what} of {ordinal(i + 1)} network interface")
                  for key, title, what in per_nic]
    return decls


def _live() -> list[FieldDecl]:
    return [
        FieldDecl("status", "Status", c.QFT_TEXT, _STATUS_DOC, live=True,
                  schema={"type": "string", "enum": list(INSTST_ALL)}),
        FieldDecl("oper_state", "Running", c.QFT_BOOL, "Actual state of instance", live=True),
        FieldDecl("console", "Console", c.QFT_OTHER, "Instance console information",
                  live=True, schema={"type": "object", "nullable": True}),
        FieldDecl("oper_ram", "Memory", c.QFT_UNIT,
                  "Actual memory usage as seen by hypervisor", live=True),
        FieldDecl("oper_vcpus", "VCPUs", c.QFT_NUMBER,
                  "Actual number of VCPUs as seen by hypervisor", live=True),
    ]


def _with_aliases(table: dict[str, FieldDecl]) -> dict[str, FieldDecl]:
    """The table plus every alias, each a copy of its field under the alias's name."""
    result = dict(table)
    for alias, target in ALIASES.items():
        decl = table[target]
        result[alias] = FieldDecl(alias, decl.title, decl.kind, decl.doc, live=decl.live,
                                  split_timestamp=decl.split_timestamp,
                                  hostname=decl.hostname, schema=decl.schema)
    return result


INSTANCE_FIELDS: dict[str, FieldDecl] = _with_aliases(decl_table([
    *_simple(), *_parameters(), *_disks(), *_nics(), *_live(),
    *common_fields("Instance")[:4],
    FieldDecl("forthcoming", "Forthcoming", c.QFT_BOOL, "whether the Instance is forthcoming"),
    common_fields("Instance")[4],
]))

#: Fields whose values need the nodes' ``all_instances_info`` answer.
INSTANCE_LIVE_FIELDS = frozenset(name for name, decl in INSTANCE_FIELDS.items() if decl.live)

__all__ = ["ALIASES", "BE_PARAMETERS", "HV_PARAMETER_KINDS", "HV_PARAMETER_TITLES",
           "INSTANCE_FIELDS", "INSTANCE_LIVE_FIELDS", "INSTST_ALL", "INSTST_ADMINDOWN",
           "INSTST_ADMINOFFLINE", "INSTST_ERRORDOWN", "INSTST_ERRORUP", "INSTST_NODEDOWN",
           "INSTST_NODEOFFLINE", "INSTST_RUNNING", "INSTST_USERDOWN", "INSTST_WRONGNODE",
           "MAX_DISKS", "MAX_NICS", "ordinal"]

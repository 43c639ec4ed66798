"""The fields of query resources "node" and "group" (``gnt-node``/``gnt-group list-fields``).

Names, titles, kinds and meanings are Ganeti's.  Node fields marked
``live`` come from the nodes themselves (the node_info call); the rest from
the config.
"""

from __future__ import annotations

from typing import Any

from ganeti.core import constants as c
from ganeti.core.queryfields.base import FieldDecl, decl_table

STRING_LIST: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
OBJECT: dict[str, Any] = {"type": "object"}
#: The node role letters a query answers.
ROLES = (c.NR_MASTER, c.NR_MCANDIDATE, c.NR_DRAINED, c.NR_OFFLINE, c.NR_REGULAR)

#: Titles and kinds of the ``ndp/*`` fields as Ganeti declares them (a parameter not
#: listed gets its name as title and a kind from its type; strings are "other").
_NDP_META: dict[str, tuple[str, str]] = {
    c.ND_OOB_PROGRAM: ("OutOfBandProgram", c.QFT_OTHER),
    c.ND_SPINDLE_COUNT: ("SpindleCount", c.QFT_NUMBER),
    c.ND_EXCLUSIVE_STORAGE: ("ExclusiveStorage", c.QFT_BOOL),
    c.ND_OVS: ("OpenvSwitch", c.QFT_BOOL),
    c.ND_OVS_NAME: ("OpenvSwitchName", c.QFT_OTHER),
    c.ND_OVS_LINK: ("OpenvSwitchLink", c.QFT_OTHER),
}


def ndparam_fields() -> list[FieldDecl]:
    """``ndp/<name>`` for every node parameter, by name."""
    decls = []
    for name in sorted(c.NDC_DEFAULTS):
        kind = {bool: c.QFT_BOOL, int: c.QFT_NUMBER, float: c.QFT_NUMBER_FLOAT}.get(
            type(c.NDC_DEFAULTS[name]), c.QFT_OTHER)
        title, kind = _NDP_META.get(name, (f"ndp/{name}", kind))
        decls.append(FieldDecl(f"ndp/{name}", title, kind, f"The \"{name}\" node parameter"))
    return decls


def common_fields(label: str) -> list[FieldDecl]:
    """ctime, mtime, uuid, serial_no and tags of a config object."""
    return [
        FieldDecl("ctime", "CTime", c.QFT_TIMESTAMP, "Creation timestamp"),
        FieldDecl("mtime", "MTime", c.QFT_TIMESTAMP, "Modification timestamp"),
        FieldDecl("uuid", "UUID", c.QFT_TEXT, f"{label} UUID"),
        FieldDecl("serial_no", "SerialNo", c.QFT_NUMBER,
                  f"{label} object serial number, incremented on each modification"),
        FieldDecl("tags", "Tags", c.QFT_OTHER, "Tags", schema=STRING_LIST),
    ]


_ROLE_DOC = ("Node role; \"M\" for master, \"C\" for master candidate, \"R\" for regular, "
             "\"D\" for drained, \"O\" for offline")
_ROLE_SCHEMA = {"type": "string", "enum": sorted(ROLES),
                "description": "M (master), C (candidate), R (regular), D (drained), "
                               "O (offline)"}


def _live(name: str, title: str, kind: str, doc: str) -> FieldDecl:
    return FieldDecl(name, title, kind, doc, live=True)


NODE_FIELDS: dict[str, FieldDecl] = decl_table([
    FieldDecl("drained", "Drained", c.QFT_BOOL, "Whether node is drained"),
    FieldDecl("master_candidate", "MasterC", c.QFT_BOOL, "Whether node is a master candidate"),
    FieldDecl("master_capable", "MasterCapable", c.QFT_BOOL,
              "Whether node can become a master candidate"),
    FieldDecl("name", "Node", c.QFT_TEXT, "Node name", hostname=True),
    FieldDecl("offline", "Offline", c.QFT_BOOL, "Whether node is marked offline"),
    FieldDecl("vm_capable", "VMCapable", c.QFT_BOOL, "Whether node can host instances"),
    FieldDecl("pip", "PrimaryIP", c.QFT_TEXT, "Primary IP address"),
    FieldDecl("sip", "SecondaryIP", c.QFT_TEXT, "Secondary IP address"),
    FieldDecl("master", "IsMaster", c.QFT_BOOL, "Whether node is master"),
    FieldDecl("group", "Group", c.QFT_TEXT, "Node group"),
    FieldDecl("group.uuid", "GroupUUID", c.QFT_TEXT, "UUID of node group"),
    FieldDecl("ndparams", "NodeParameters", c.QFT_OTHER, "Merged node parameters",
              schema=OBJECT),
    FieldDecl("custom_ndparams", "CustomNodeParameters", c.QFT_OTHER,
              "Custom node parameters", schema=OBJECT),
    FieldDecl("pinst_cnt", "Pinst", c.QFT_NUMBER,
              "Number of instances with this node as primary"),
    FieldDecl("sinst_cnt", "Sinst", c.QFT_NUMBER,
              "Number of instances with this node as secondary"),
    FieldDecl("pinst_list", "PriInstances", c.QFT_OTHER,
              "List of instances with this node as primary", schema=STRING_LIST),
    FieldDecl("sinst_list", "SecInstances", c.QFT_OTHER,
              "List of instances with this node as secondary", schema=STRING_LIST),
    FieldDecl("role", "Role", c.QFT_TEXT, _ROLE_DOC, schema=_ROLE_SCHEMA),
    FieldDecl("powered", "Powered", c.QFT_BOOL, "Whether node is thought to be powered on"),
    FieldDecl("hv_state", "HypervisorState", c.QFT_OTHER, "Hypervisor state"),
    FieldDecl("disk_state", "DiskState", c.QFT_OTHER, "Disk state"),
    _live("bootid", "BootID", c.QFT_TEXT, "Random UUID renewed for each system reboot, can "
          "be used for detecting reboots by tracking changes"),
    _live("cnodes", "CNodes", c.QFT_NUMBER,
          "Number of NUMA domains on node (if exported by hypervisor)"),
    _live("cnos", "CNOs", c.QFT_NUMBER,
          "Number of logical processors used by the node OS (dom0 for Xen)"),
    _live("csockets", "CSockets", c.QFT_NUMBER,
          "Number of physical CPU sockets (if exported by hypervisor)"),
    _live("ctotal", "CTotal", c.QFT_NUMBER, "Number of logical processors"),
    _live("dfree", "DFree", c.QFT_UNIT, "Available storage space on storage unit"),
    _live("dtotal", "DTotal", c.QFT_UNIT,
          "Total storage space on storage unit for instance disk allocation"),
    _live("spfree", "SpFree", c.QFT_NUMBER,
          "Available spindles in volume group (exclusive storage only)"),
    _live("sptotal", "SpTotal", c.QFT_NUMBER,
          "Total spindles in volume group (exclusive storage only)"),
    _live("mfree", "MFree", c.QFT_UNIT, "Memory available for instance allocations"),
    _live("mnode", "MNode", c.QFT_UNIT, "Amount of memory used by node (dom0 for Xen)"),
    _live("mtotal", "MTotal", c.QFT_UNIT, "Total amount of memory of physical machine"),
    FieldDecl("hv_accel", "HvAccel", c.QFT_TEXT, "What the node's kvm guests run under: "
              "kvm, or qemu (TCG) where KVM cannot boot a guest (extension)", live=True,
              extension=True, schema={"type": "string", "enum": ["kvm", "qemu (TCG)"]}),
    *ndparam_fields(),
    *common_fields("Node"),
])

#: Fields whose values need the node_info call.
NODE_LIVE_FIELDS = frozenset(name for name, decl in NODE_FIELDS.items() if decl.live)

GROUP_FIELDS: dict[str, FieldDecl] = decl_table([
    FieldDecl("alloc_policy", "AllocPolicy", c.QFT_TEXT, "Allocation policy for group",
              schema={"type": "string", "enum": list(c.VALID_ALLOC_POLICIES)}),
    FieldDecl("custom_diskparams", "CustomDiskParameters", c.QFT_OTHER,
              "Custom disk parameters", schema=OBJECT),
    FieldDecl("custom_ipolicy", "CustomInstancePolicy", c.QFT_OTHER,
              "Custom instance policy limitations", schema=OBJECT),
    FieldDecl("custom_ndparams", "CustomNDParams", c.QFT_OTHER, "Custom node parameters",
              schema=OBJECT),
    FieldDecl("diskparams", "DiskParameters", c.QFT_OTHER, "Disk parameters (merged)",
              schema=OBJECT),
    FieldDecl("ipolicy", "InstancePolicy", c.QFT_OTHER,
              "Instance policy limitations (merged)", schema=OBJECT),
    FieldDecl("name", "Group", c.QFT_TEXT, "Group name"),
    FieldDecl("ndparams", "NDParams", c.QFT_OTHER, "Node parameters", schema=OBJECT),
    FieldDecl("node_cnt", "Nodes", c.QFT_NUMBER, "Number of nodes"),
    FieldDecl("node_list", "NodeList", c.QFT_OTHER, "List of nodes", schema=STRING_LIST),
    FieldDecl("pinst_cnt", "Instances", c.QFT_NUMBER, "Number of primary instances"),
    FieldDecl("pinst_list", "InstanceList", c.QFT_OTHER, "List of primary instances",
              schema=STRING_LIST),
    *ndparam_fields(),
    *common_fields("Group"),
])

__all__ = ["GROUP_FIELDS", "NODE_FIELDS", "NODE_LIVE_FIELDS", "ROLES", "common_fields",
           "ndparam_fields"]

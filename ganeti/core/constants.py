"""Constants that are part of Ganeti's interfaces (versions, ports, names, defaults)."""

from __future__ import annotations


def build_version(major: int, minor: int, revision: int) -> int:
    """Ganeti's integer encoding of a version: 1000000*major + 10000*minor + revision."""
    return 1000000 * major + 10000 * minor + revision


def split_version(version: int) -> tuple[int, int, int]:
    """Inverse of :func:`build_version`."""
    major, rest = divmod(version, 1000000)
    minor, revision = divmod(rest, 10000)
    return major, minor, revision


# The Ganeti release whose interfaces we implement (Debian 12 ships 3.0).
RELEASE_VERSION = "3.0.2"
CONFIG_MAJOR, CONFIG_MINOR, CONFIG_REVISION = 3, 0, 0
CONFIG_VERSION = build_version(CONFIG_MAJOR, CONFIG_MINOR, CONFIG_REVISION)
# config.data versions we can load (same object shapes; 3.1 only adds fields).
LOADABLE_CONFIG_VERSIONS = frozenset({CONFIG_VERSION, build_version(3, 1, 0)})
LUXI_VERSION = CONFIG_VERSION
PROTOCOL_VERSION = CONFIG_VERSION  # the internode protocol of Ganeti 3.0
OS_API_VERSIONS = (10, 15, 20)
OS_API_VERSION = max(OS_API_VERSIONS)
EXPORT_VERSION = 0
JOB_QUEUE_VERSION = 1

# Ports
DEFAULT_NODED_PORT = 1811
DEFAULT_CONFD_PORT = 1814
DEFAULT_RAPI_PORT = 5080

# Daemons: name -> log file name (under LOG_DIR), as in Ganeti.
MASTERD = "ganeti-masterd"
NODED = "ganeti-noded"
CONFD = "ganeti-confd"
RAPI = "ganeti-rapi"
DAEMON_LOG_FILES = {
    MASTERD: "master-daemon.log",
    NODED: "node-daemon.log",
    CONFD: "conf-daemon.log",
    RAPI: "rapi-daemon.log",
}
#: ganeti-rapi's access log (Common Log Format), under LOG_DIR.
RAPI_ACCESS_LOG = "rapi-access.log"

# LUXI
LUXI_EOM = b"\x03"
LUXI_KEY_METHOD = "method"
LUXI_KEY_ARGS = "args"
LUXI_KEY_VERSION = "version"
LUXI_KEY_SUCCESS = "success"
LUXI_KEY_RESULT = "result"
LUXI_MAX_FRAME = 4 * 1024 * 1024  # bytes of one request before ETX
LUXI_DEF_CTMO = 30
LUXI_DEF_RWTO = 180

# Hypervisors and disk templates
HT_KVM = "kvm"
HT_FAKE = "fake"
HT_XEN_PVM = "xen-pvm"
HT_XEN_HVM = "xen-hvm"
HT_LXC = "lxc"
HT_CHROOT = "chroot"
HYPER_TYPES = frozenset({HT_KVM, HT_FAKE, HT_XEN_PVM, HT_XEN_HVM, HT_LXC, HT_CHROOT})

# Instance reboot types (Ganeti's INSTANCE_REBOOT_*); "full" is a stop and a start
# done by the master, never sent to a node
INSTANCE_REBOOT_SOFT = "soft"
INSTANCE_REBOOT_HARD = "hard"
INSTANCE_REBOOT_FULL = "full"
REBOOT_TYPES = frozenset({INSTANCE_REBOOT_SOFT, INSTANCE_REBOOT_HARD, INSTANCE_REBOOT_FULL})
#: Seconds an instance gets to shut down cleanly before it is destroyed (Ganeti's)
DEFAULT_SHUTDOWN_TIMEOUT = 120

# What a hypervisor says of a running instance (Ganeti's HvInstanceState): it runs, or
# its guest shut itself down while the hypervisor still holds it
HV_STATE_RUNNING = 0
HV_STATE_SHUTDOWN = 1
HV_STATES = frozenset({HV_STATE_RUNNING, HV_STATE_SHUTDOWN})
# Migration statuses (Ganeti's HV_MIGRATION_*): what ``instance_get_migration_status``
# answers; the failed ones make the master abort, the active ones make it poll again
HV_MIGRATION_ACTIVE = "active"
HV_MIGRATION_CANCELLED = "cancelled"
HV_MIGRATION_COMPLETED = "completed"
HV_MIGRATION_FAILED = "failed"
HV_MIGRATION_VALID_STATUSES = frozenset({HV_MIGRATION_ACTIVE, HV_MIGRATION_CANCELLED,
                                         HV_MIGRATION_COMPLETED, HV_MIGRATION_FAILED})
HV_MIGRATION_FAILED_STATUSES = frozenset({HV_MIGRATION_CANCELLED, HV_MIGRATION_FAILED})
HV_KVM_MIGRATION_POSTCOPY_ACTIVE = "postcopy-active"
HV_KVM_MIGRATION_ACTIVE_STATUSES = frozenset({HV_MIGRATION_ACTIVE,
                                              HV_KVM_MIGRATION_POSTCOPY_ACTIVE})
# Migration modes (Ganeti's HT_MIGRATION_*; the ``migration_mode`` parameter)
HT_MIGRATION_LIVE = "live"
HT_MIGRATION_NONLIVE = "non-live"
HT_MIGRATION_MODES = frozenset({HT_MIGRATION_LIVE, HT_MIGRATION_NONLIVE})
# Replace-disks modes (Ganeti's REPLACE_DISK_*; OP_INSTANCE_REPLACE_DISKS's ``mode``)
REPLACE_DISK_PRI = "replace_on_primary"
REPLACE_DISK_SEC = "replace_on_secondary"
REPLACE_DISK_CHG = "replace_new_secondary"
REPLACE_DISK_AUTO = "replace_auto"
REPLACE_MODES = frozenset({REPLACE_DISK_PRI, REPLACE_DISK_SEC, REPLACE_DISK_CHG,
                           REPLACE_DISK_AUTO})

DT_DISKLESS = "diskless"
DT_FILE = "file"
DT_SHARED_FILE = "sharedfile"
DT_PLAIN = "plain"
DT_DRBD8 = "drbd"
DT_BLOCK = "blockdev"
DT_RBD = "rbd"
DT_EXT = "ext"
DT_GLUSTER = "gluster"
DISK_TEMPLATES = frozenset({DT_DISKLESS, DT_FILE, DT_SHARED_FILE, DT_PLAIN, DT_DRBD8,
                            DT_BLOCK, DT_RBD, DT_EXT, DT_GLUSTER})

# Values of the "access" disk parameter (rbd, ext, gluster)
DISK_KERNELSPACE = "kernelspace"
DISK_USERSPACE = "userspace"
DISK_VALID_ACCESS_MODES = frozenset({DISK_KERNELSPACE, DISK_USERSPACE})

# DRBD ports are handed out from here; init records FIRST_DRBD_PORT - 1 as the
# highest port used so far.
FIRST_DRBD_PORT = 11000
LAST_DRBD_PORT = 14999
# Size (MiB) of a drbd disk's metadata volume, its second child next to the data
# volume (Ganeti's DRBD_META_SIZE); counted in a drbd disk's space needs.
DRBD_META_SIZE = 128

# Disks in config.data (Ganeti's values)
DISK_RDWR = "rw"
DISK_RDONLY = "ro"
DISK_ACCESS_SET = frozenset({DISK_RDWR, DISK_RDONLY})
FD_LOOP = "loop"
FILE_DRIVERS = frozenset({FD_LOOP, "blktap", "blktap2"})
BLOCKDEV_DRIVER_MANUAL = "manual"
# Who set an instance's admin state last (admin_state_source)
ADMIN_SOURCE = "admin"
USER_SOURCE = "user"
INSTANCE_ADMIN_SOURCES = frozenset({ADMIN_SOURCE, USER_SOURCE})
# nicparams "mode" values Ganeti 3.0 accepts in a config (its NIC_VALID_MODES)
NIC_MODE_POOL = "pool"

# The host's SSH public keys; init stores their base64 part in the cluster
# (rsahostkeypub, dsahostkeypub).  Not under GANETI_ROOTDIR, as in Ganeti.
SSH_HOST_RSA_PUB = "/etc/ssh/ssh_host_rsa_key.pub"
SSH_HOST_DSA_PUB = "/etc/ssh/ssh_host_dsa_key.pub"

# Node roles (one-letter codes used by queries) and their words (RAPI /role).
NR_MASTER = "M"
NR_MCANDIDATE = "C"
NR_DRAINED = "D"
NR_OFFLINE = "O"
NR_REGULAR = "R"

# Instance admin states
ADMINST_UP = "up"
ADMINST_DOWN = "down"
ADMINST_OFFLINE = "offline"
ADMINST_ALL = frozenset({ADMINST_UP, ADMINST_DOWN, ADMINST_OFFLINE})

# Node group allocation policies
ALLOC_POLICY_PREFERRED = "preferred"
ALLOC_POLICY_LAST_RESORT = "last_resort"
ALLOC_POLICY_UNALLOCABLE = "unallocable"
VALID_ALLOC_POLICIES = (ALLOC_POLICY_PREFERRED, ALLOC_POLICY_LAST_RESORT,
                        ALLOC_POLICY_UNALLOCABLE)

# Tags
TAG_CLUSTER = "cluster"
TAG_NODE = "node"
TAG_NODEGROUP = "nodegroup"
TAG_INSTANCE = "instance"
TAG_NETWORK = "network"
VALID_TAG_TYPES = frozenset({TAG_CLUSTER, TAG_NODE, TAG_NODEGROUP, TAG_INSTANCE, TAG_NETWORK})
MAX_TAG_LEN = 128
MAX_TAGS_PER_OBJ = 4096

# Cluster defaults
DEFAULT_CANDIDATE_POOL_SIZE = 10
DEFAULT_MAX_RUNNING_JOBS = 20
DEFAULT_MAX_TRACKED_JOBS = 25
DEFAULT_MAC_PREFIX = "aa:00:00"
DEFAULT_VG = "xenvg"
DEFAULT_BRIDGE = "xen-br0"
DEFAULT_MASTER_NETDEV = "lo"
DEFAULT_DRBD_HELPER = "/bin/true"
DEFAULT_FILE_STORAGE_DIR = "/srv/ganeti/file-storage"
DEFAULT_SHARED_FILE_STORAGE_DIR = "/srv/ganeti/shared-file-storage"
DEFAULT_GLUSTER_STORAGE_DIR = "/var/run/ganeti/gluster"
DEFAULT_NODEGROUP_NAME = "default"
UIDPOOL_UID_MIN = 0
UIDPOOL_UID_MAX = 2**32 - 1

# Exit codes of the command-line tools (Ganeti's values).
EXIT_SUCCESS = 0
EXIT_FAILURE = 1
EXIT_NOTCLUSTER = 5
EXIT_NOTMASTER = 11
EXIT_NODESETUP_ERROR = 12
EXIT_CONFIRMATION = 13
EXIT_UNKNOWN_FIELD = 14  # a list command was asked for fields that do not exist

# Node parameters
ND_OOB_PROGRAM = "oob_program"
ND_SPINDLE_COUNT = "spindle_count"
ND_EXCLUSIVE_STORAGE = "exclusive_storage"
ND_OVS = "ovs"
ND_OVS_NAME = "ovs_name"
ND_OVS_LINK = "ovs_link"
ND_SSH_PORT = "ssh_port"
ND_CPU_SPEED = "cpu_speed"

# Out-of-band commands (Ganeti's OOB_*), run by the ndparam oob_program
OOB_POWER_ON = "power-on"
OOB_POWER_OFF = "power-off"
OOB_POWER_CYCLE = "power-cycle"
OOB_POWER_STATUS = "power-status"
OOB_HEALTH = "health"
OOB_COMMANDS = frozenset({OOB_POWER_ON, OOB_POWER_OFF, OOB_POWER_CYCLE, OOB_POWER_STATUS,
                          OOB_HEALTH})
OOB_POWER_STATUS_POWERED = "powered"
OOB_TIMEOUT = 60
OOB_POWER_DELAY = 2.0
OOB_STATUS_OK = "OK"
OOB_STATUS_WARNING = "WARNING"
OOB_STATUS_CRITICAL = "CRITICAL"
OOB_STATUS_UNKNOWN = "UNKNOWN"
OOB_STATUSES = frozenset({OOB_STATUS_OK, OOB_STATUS_WARNING, OOB_STATUS_CRITICAL,
                          OOB_STATUS_UNKNOWN})
NDC_DEFAULTS: dict[str, object] = {
    ND_OOB_PROGRAM: "",
    ND_SPINDLE_COUNT: 1,
    ND_EXCLUSIVE_STORAGE: False,
    ND_OVS: False,
    ND_OVS_NAME: "switch1",
    ND_OVS_LINK: "",
    ND_SSH_PORT: 22,
    ND_CPU_SPEED: 1.0,
}

# Backend parameters
BE_MAXMEM = "maxmem"
BE_MINMEM = "minmem"
BE_VCPUS = "vcpus"
BE_AUTO_BALANCE = "auto_balance"
BE_ALWAYS_FAILOVER = "always_failover"
BE_SPINDLE_USE = "spindle_use"
BEC_DEFAULTS: dict[str, object] = {
    BE_MINMEM: 128,
    BE_MAXMEM: 128,
    BE_VCPUS: 1,
    BE_AUTO_BALANCE: True,
    BE_ALWAYS_FAILOVER: False,
    BE_SPINDLE_USE: 1,
}

# NIC parameters
NIC_MODE = "mode"
NIC_LINK = "link"
NIC_VLAN = "vlan"
NIC_MODE_BRIDGED = "bridged"
NIC_MODE_ROUTED = "routed"
NIC_MODE_OVS = "openvswitch"
NIC_VALID_MODES = frozenset({NIC_MODE_BRIDGED, NIC_MODE_ROUTED, NIC_MODE_OVS})
NICC_DEFAULTS: dict[str, object] = {
    NIC_MODE: NIC_MODE_BRIDGED,
    NIC_LINK: DEFAULT_BRIDGE,
    NIC_VLAN: "",
}

# Instance policy
ISPEC_MEM_SIZE = "memory-size"
ISPEC_CPU_COUNT = "cpu-count"
ISPEC_DISK_COUNT = "disk-count"
ISPEC_DISK_SIZE = "disk-size"
ISPEC_NIC_COUNT = "nic-count"
ISPEC_SPINDLE_USE = "spindle-use"
ISPECS_PARAMETERS = (ISPEC_MEM_SIZE, ISPEC_CPU_COUNT, ISPEC_DISK_COUNT, ISPEC_DISK_SIZE,
                     ISPEC_NIC_COUNT, ISPEC_SPINDLE_USE)
IPOLICY_DTS = "disk-templates"
IPOLICY_VCPU_RATIO = "vcpu-ratio"
IPOLICY_SPINDLE_RATIO = "spindle-ratio"
IPOLICY_MINMAX = "minmax"
IPOLICY_STD = "std"
ISPECS_MIN = "min"
ISPECS_MAX = "max"
ISPECS_MINMAX_DEFAULTS: dict[str, dict[str, int]] = {
    ISPECS_MIN: {ISPEC_MEM_SIZE: 128, ISPEC_CPU_COUNT: 1, ISPEC_DISK_COUNT: 1,
                 ISPEC_DISK_SIZE: 1024, ISPEC_NIC_COUNT: 1, ISPEC_SPINDLE_USE: 1},
    ISPECS_MAX: {ISPEC_MEM_SIZE: 32768, ISPEC_CPU_COUNT: 8, ISPEC_DISK_COUNT: 16,
                 ISPEC_DISK_SIZE: 1024 * 1024, ISPEC_NIC_COUNT: 8, ISPEC_SPINDLE_USE: 12},
}
ISPECS_STD_DEFAULTS: dict[str, int] = {
    ISPEC_MEM_SIZE: 128, ISPEC_CPU_COUNT: 1, ISPEC_DISK_COUNT: 1, ISPEC_DISK_SIZE: 1024,
    ISPEC_NIC_COUNT: 1, ISPEC_SPINDLE_USE: 1,
}
IPOLICY_DEFAULT_VCPU_RATIO = 4.0
IPOLICY_DEFAULT_SPINDLE_RATIO = 32.0

# Disk parameters per template (the subset with meaning before storage arrives).
DISK_DT_DEFAULTS: dict[str, dict[str, object]] = {
    DT_PLAIN: {"stripes": 1},
    DT_DRBD8: {"resync-rate": 61440, "data-stripes": 1, "meta-stripes": 1,
               "disk-barriers": "n", "meta-barriers": False, "metavg": DEFAULT_VG,
               "disk-custom": "", "net-custom": "", "protocol": "C",
               "dynamic-resync": False, "c-plan-ahead": 20, "c-fill-target": 0,
               "c-delay-target": 1, "c-max-rate": 61440, "c-min-rate": 4096},
    DT_DISKLESS: {},
    DT_FILE: {},
    DT_SHARED_FILE: {},
    DT_BLOCK: {},
    DT_RBD: {"pool": "rbd", "access": DISK_KERNELSPACE},
    DT_EXT: {"access": DISK_KERNELSPACE},
    DT_GLUSTER: {"access": DISK_KERNELSPACE, "host": "127.0.0.1", "port": 24007,
                 "volume": "gv0"},
}

# Hypervisor parameters: the defaults of the hypervisors this project ships (the
# others' follow below).
HVC_DEFAULTS: dict[str, dict[str, object]] = {
    HT_FAKE: {"migration_mode": "live"},
    HT_KVM: {
        "kernel_path": "", "initrd_path": "", "root_path": "/dev/vda1",
        "kernel_args": "ro", "acpi": True, "serial_console": True,
        "serial_speed": 38400, "vnc_bind_address": "", "vnc_tls": False,
        "vnc_password_file": "", "boot_order": "disk", "cdrom_image_path": "",
        "nic_type": "paravirtual", "disk_type": "paravirtual", "disk_cache": "default",
        "security_model": "none", "security_domain": "", "migration_downtime": 30,
        "migration_port": 8102, "migration_bandwidth": 32, "migration_mode": "live",
        "use_localtime": False, "mem_path": "", "cpu_mask": "all", "cpu_type": "",
        "cpu_cores": 0, "cpu_threads": 0, "cpu_sockets": 0, "usb_mouse": "",
        "keymap": "", "reboot_behavior": "reboot", "kvm_flag": "",
        "machine_version": "", "kvm_extra": "", "user_shutdown": False,
    },
}

#: The VNC password file Ganeti's xen-hvm defaults name (under the node's root
#: directory: :func:`ganeti.core.bootstrap` writes it with the cluster's paths).
VNC_PASSWORD_FILE_DEFAULT = "/etc/ganeti/vnc-cluster-password"

# The hypervisors Ganeti knows that this project cannot run: their parameters and
# Ganeti 3.0's defaults (Debian's build), so that the cluster lists and accepts them
# as Ganeti does (gnt-os modify -H, GetInfo/modify over RAPI), enabled or not.
HVC_DEFAULTS.update({
    HT_XEN_PVM: {
        "use_bootloader": False, "bootloader_path": "", "bootloader_args": "",
        "kernel_path": "/boot/vmlinuz-3-xenU", "initrd_path": "", "root_path": "/dev/xvda1",
        "kernel_args": "ro", "migration_port": 8002, "migration_mode": "live",
        "blockdev_prefix": "sd", "reboot_behavior": "reboot", "cpu_mask": "all",
        "cpu_cap": 0, "cpu_weight": 256, "vif_script": "", "xen_cmd": "xm", "cpuid": "",
        "soundhw": "",
    },
    HT_XEN_HVM: {
        "boot_order": "cd", "cdrom_image_path": "", "nic_type": "rtl8139",
        "disk_type": "paravirtual", "vnc_bind_address": "0.0.0.0",
        "vnc_password_file": VNC_PASSWORD_FILE_DEFAULT, "acpi": True, "pae": True,
        "kernel_path": "/usr/lib/xen/boot/hvmloader",
        "device_model": "/usr/lib/xen/bin/qemu-dm", "migration_port": 8002,
        "migration_mode": "non-live", "use_localtime": False, "blockdev_prefix": "hd",
        "pci_pass": "", "reboot_behavior": "reboot", "cpu_mask": "all", "cpu_cap": 0,
        "cpu_weight": 256, "vif_type": "ioemu", "vif_script": "", "viridian": False,
        "xen_cmd": "xm", "cpuid": "", "soundhw": "",
    },
    HT_LXC: {
        "cpu_mask": "",
        "devices": "c 1:3 rw,c 1:5 rw,c 1:7 rw,c 1:8 rw,c 1:9 rw,c 1:10 rw,c 5:0 rw,"
                   "c 5:1 rw,c 5:2 rw,c 136:* rw",
        "drop_capabilities": "mac_override,sys_boot,sys_module,sys_time,sys_admin",
        "extra_cgroups": "", "extra_config": "", "num_ttys": 6, "startup_timeout": 30,
    },
    HT_CHROOT: {"init_script": "/ganeti-chroot"},
})

# Hypervisors we can enable today (the others are refused at init).
ENABLED_HYPERVISOR_CHOICES = frozenset({HT_KVM, HT_FAKE})

# ---------------------------------------------------------------------------
# Job queue, opcodes and queries (added with ganeti.core.opcodes, .jobs,
# .query and .qfilter).  Values are Ganeti's wire strings and numbers.
# ---------------------------------------------------------------------------

# Job and opcode statuses (the same strings), in Ganeti's comparison order.
JOB_STATUS_QUEUED = "queued"
JOB_STATUS_WAITING = "waiting"
JOB_STATUS_CANCELING = "canceling"
JOB_STATUS_RUNNING = "running"
JOB_STATUS_CANCELED = "canceled"
JOB_STATUS_SUCCESS = "success"
JOB_STATUS_ERROR = "error"
JOB_STATUS_ORDER = (JOB_STATUS_QUEUED, JOB_STATUS_WAITING, JOB_STATUS_CANCELING,
                    JOB_STATUS_RUNNING, JOB_STATUS_CANCELED, JOB_STATUS_SUCCESS,
                    JOB_STATUS_ERROR)
JOB_STATUS_ALL = frozenset(JOB_STATUS_ORDER)
JOBS_PENDING = frozenset({JOB_STATUS_QUEUED, JOB_STATUS_WAITING, JOB_STATUS_CANCELING})
JOBS_FINALIZED = frozenset({JOB_STATUS_CANCELED, JOB_STATUS_SUCCESS, JOB_STATUS_ERROR})

# Job ids on the wire: integers, or strings of this form.
JOB_ID_TEMPLATE = r"\d+"

# Opcode priorities: lower numbers run first.
OP_PRIO_HIGHEST = -20
OP_PRIO_HIGH = -10
OP_PRIO_NORMAL = 0
OP_PRIO_LOW = 10
OP_PRIO_LOWEST = 19
OP_PRIO_DEFAULT = OP_PRIO_NORMAL
OP_PRIO_SUBMIT_VALID = frozenset({OP_PRIO_HIGH, OP_PRIO_NORMAL, OP_PRIO_LOW})

# Types of job log entries ([serial, [s, us], type, message]).
ELOG_MESSAGE = "message"
ELOG_MESSAGE_LIST = "message-list"
ELOG_REMOTE_IMPORT = "remote-import"
ELOG_JQUEUE_TEST = "jqueue-test"
ELOG_DELAY_TEST = "delay-test"
ELOG_TYPES = frozenset({ELOG_MESSAGE, ELOG_MESSAGE_LIST, ELOG_REMOTE_IMPORT,
                        ELOG_JQUEUE_TEST, ELOG_DELAY_TEST})

# Reason trail sources (the "gnt:" prefix is reserved for Ganeti itself).
OPCODE_REASON_SRC_CLIENT = "gnt:client"
OPCODE_REASON_SRC_OPCODE = "gnt:opcode"
OPCODE_REASON_SRC_PICKUP = "gnt:daemon:masterd:pickup"
OPCODE_REASON_SRC_NODED = "gnt:daemon:noded"
OPCODE_REASON_SRC_WATCHER = "gnt:watcher"
OPCODE_REASON_SRC_RLIB2 = "gnt:library:rlib2"
OPCODE_REASON_SRC_USER = "gnt:user"

# Query resources ("what" of Query, QueryFields, OP_QUERY, OP_QUERY_FIELDS).
QR_CLUSTER = "cluster"
QR_INSTANCE = "instance"
QR_NODE = "node"
QR_GROUP = "group"
QR_NETWORK = "network"
QR_OS = "os"
QR_EXTSTORAGE = "extstorage"
QR_EXPORT = "export"
QR_JOB = "job"
QR_LOCK = "lock"
QR_FILTER = "filter"
# Resources OP_QUERY / OP_QUERY_FIELDS accept today; grows as resources arrive.
QR_VIA_OPCODE = frozenset({QR_JOB, QR_LOCK, QR_NODE, QR_GROUP, QR_INSTANCE, QR_NETWORK,
                           QR_OS})

# Checks cluster verify may be told to skip (Ganeti's VERIFY_OPTIONAL_CHECKS).
VERIFY_NPLUSONE_MEM = "nplusone_mem"
VERIFY_HVPARAM_ASSESSMENT = "hvparam_assessment"
VERIFY_OPTIONAL_CHECKS = frozenset({VERIFY_NPLUSONE_MEM, VERIFY_HVPARAM_ASSESSMENT})

# Query field kinds.
QFT_UNKNOWN = "unknown"
QFT_TEXT = "text"
QFT_BOOL = "bool"
QFT_NUMBER = "number"
QFT_NUMBER_FLOAT = "float"
QFT_UNIT = "unit"
QFT_TIMESTAMP = "timestamp"
QFT_OTHER = "other"
QFT_ALL = frozenset({QFT_UNKNOWN, QFT_TEXT, QFT_BOOL, QFT_NUMBER, QFT_NUMBER_FLOAT,
                     QFT_UNIT, QFT_TIMESTAMP, QFT_OTHER})

# Query result status of one value ([status, value] in a data row).
RS_NORMAL = 0
RS_UNKNOWN = 1
RS_NODATA = 2
RS_UNAVAIL = 3
RS_OFFLINE = 4
RS_ALL = frozenset({RS_NORMAL, RS_UNKNOWN, RS_NODATA, RS_UNAVAIL, RS_OFFLINE})

# Query filter operators (JSON prefix lists).
QLANG_OP_OR = "|"
QLANG_OP_AND = "&"
QLANG_OP_NOT = "!"
QLANG_OP_TRUE = "?"
QLANG_OP_EQUAL = "=="
QLANG_OP_EQUAL_LEGACY = "="
QLANG_OP_NOT_EQUAL = "!="
QLANG_OP_LT = "<"
QLANG_OP_LE = "<="
QLANG_OP_GT = ">"
QLANG_OP_GE = ">="
QLANG_OP_REGEXP = "=~"
QLANG_OP_CONTAINS = "=[]"

# Confd (UDP, HMAC-signed read-only config queries); see docs/confd.md.
CONFD_PROTOCOL_VERSION = 1
CONFD_MAGIC_FOURCC = b"plj0"
CONFD_MAX_CLOCK_SKEW = 300
CONFD_REPLAY_WINDOW = 2 * CONFD_MAX_CLOCK_SKEW
MAX_UDP_DATA_SIZE = 61440
CONFD_CLIENT_EXPIRE_TIMEOUT = 10
CONFD_DEFAULT_REQ_COVERAGE = 6

CONFD_REQ_PING = 0
CONFD_REQ_NODE_ROLE_BYNAME = 1
CONFD_REQ_NODE_PIP_BY_INSTANCE_IP = 2
CONFD_REQ_CLUSTER_MASTER = 3
CONFD_REQ_NODE_PIP_LIST = 4
CONFD_REQ_MC_PIP_LIST = 5
CONFD_REQ_INSTANCES_IPS_LIST = 6
CONFD_REQ_NODE_DRBD = 7
CONFD_REQ_NODE_INSTANCES = 8
CONFD_REQ_INSTANCE_DISKS = 9
CONFD_REQ_CONFIG_QUERY = 10
CONFD_REQ_DATA_COLLECTORS = 11
CONFD_REQS_ALL = frozenset(range(12))
# What Ganeti's Python client accepts (it lacks NODE_INSTANCES).
CONFD_REQS = CONFD_REQS_ALL - {CONFD_REQ_NODE_INSTANCES}

CONFD_REPL_STATUS_OK = 0
CONFD_REPL_STATUS_ERROR = 1
CONFD_REPL_STATUS_NOTIMPLEMENTED = 2
CONFD_REPL_STATUSES = frozenset({0, 1, 2})

CONFD_ERROR_UNKNOWN_ENTRY = 0
CONFD_ERROR_INTERNAL = 1
CONFD_ERROR_ARGUMENT = 2

CONFD_NODE_ROLE_MASTER = 0
CONFD_NODE_ROLE_CANDIDATE = 1
CONFD_NODE_ROLE_OFFLINE = 2
CONFD_NODE_ROLE_DRAINED = 3
CONFD_NODE_ROLE_REGULAR = 4

# Keys of dict queries (strings on the wire) and CLUSTER_MASTER field codes.
CONFD_REQQ_LINK = "0"
CONFD_REQQ_IP = "1"
CONFD_REQQ_IPLIST = "2"
CONFD_REQQ_FIELDS = "3"
CONFD_REQFIELD_NAME = 0
CONFD_REQFIELD_IP = 1
CONFD_REQFIELD_MNODE_PIP = 2

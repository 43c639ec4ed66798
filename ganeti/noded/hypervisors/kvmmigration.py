"""Migration of kvm instances through libvirt: Ganeti's migration steps on
``virDomainMigrateToURI3``.

- ``migration_info`` (source): the running domain's XML (its metadata names the
  instance; libvirt sends the definition itself, so the destination only checks).
- ``accept_instance`` (destination): refuses an instance that runs here, prepares
  the console directories and expects the domain (its ``started`` event is
  reported, with the reason "migrated here").
- ``migrate_instance`` (source): a peer-to-peer migration
  (``VIR_MIGRATE_PEER2PEER``, plus ``VIR_MIGRATE_LIVE`` for a live one) from the
  source's libvirtd to the destination's at :data:`DEST_URI`, the guest's memory
  over ``tcp://<target>:<migration_port>`` at ``migration_bandwidth`` MiB/s.
  libvirt's call lasts as long as the migration, so it runs beside the
  connection's queue (:meth:`~.virt.VirtConnection.call_aside`); the step returns
  once it has been handed to libvirt, as Ganeti's kvm returns once QEMU migrates.
- ``migration_status`` (source): ``failed`` once libvirt's call failed (its
  message is logged), ``completed`` once it returned, else ``active`` with the
  memory sent and to send from libvirt's job statistics where the driver has them.
- ``finalize_migration_dst``: on success the domain must run here and becomes
  ours; on failure whatever arrived is destroyed.
- ``finalize_migration_source``: on success the instance is forgotten here (the
  domain stopped with libvirt's "migrated" reason, which makes no event); on
  failure a migration still running is aborted (``abortJob``).

``migration_downtime`` (ms) is set on the domain before it migrates
(``migrateSetMaxDowntime``).  libvirt's own "is the storage shared?" check is
skipped (``VIR_MIGRATE_UNSAFE``): the master migrates only instances whose disks the
target reaches or that are mirrored to it, and libvirt takes a ``sharedfile`` disk
for a local file.  In the namespaced virtual cluster each node's libvirtd listens on
TCP at its node's address (no authentication, inside the cluster's private
network), so the peer-to-peer migration runs between two real libvirtds
(tests/integration/test_kvm_migration.py, ``make demo``).  libvirt's test driver
refuses peer-to-peer migration, which the unit tests use to exercise the failure
path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from twisted.logger import Logger
from twisted.python.failure import Failure

from ganeti.core import constants
from ganeti.noded.bdev import qmirror
from ganeti.noded.bdev.base import BlockDeviceError
from ganeti.noded.hypervisors import domainxml
from ganeti.noded.hypervisors.base import HypervisorError, MigrationStatus, instance_name
from ganeti.noded.hypervisors.kvmcalls import (
    XML_MIGRATABLE,
    code,
    gone_means,
    lookup_ours,
    not_running,
    xml_of,
)

if TYPE_CHECKING:
    from ganeti.noded.hypervisors.kvm import KvmHypervisor

# libvirt's numbers (kept here so that this module imports without libvirt)
MIGRATE_LIVE = 1
MIGRATE_PEER2PEER = 2
#: Skip libvirt's own check that the disks are on storage it knows to be shared: the
#: master migrates only instances whose storage the target reaches (Ganeti's
#: DTS_EXT_MIRROR, ``sharedfile`` here, which libvirt takes for local files) or that
#: are mirrored to it.
MIGRATE_UNSAFE = 512
PARAM_URI = "migrate_uri"
PARAM_BANDWIDTH = "bandwidth"
#: libvirt's VIR_MIGRATE_PARAM_DEST_XML: the domain as the destination defines it.
PARAM_DEST_XML = "destination_xml"
ERR_NO_SUPPORT = 3
ERR_OPERATION_INVALID = 55
#: The destination node's libvirtd as the source's libvirtd reaches it.
DEST_URI = "qemu+tcp://{host}/system"
#: Where QEMU sends the guest's memory.
MEMORY_URI = "tcp://{host}:{port}"

log = Logger()


def _host(target: str) -> str:
    return f"[{target}]" if ":" in target else target


def nbd_moves(instance: Mapping[str, Any]) -> dict[tuple[str, int], str]:
    """{(host, port) the source's guest opens: the host the destination's opens} of the
    instance's mirrored disks of the qemu engine (the source's ``disks_info``: its own
    address is ``local-ip``, the peer's ``remote-ip``; the port is the same on both)."""
    moves: dict[tuple[str, int], str] = {}
    for disk in instance.get("disks_info") or []:
        if not isinstance(disk, dict):
            continue
        dyn = disk.get("dynamic_params") or {}
        if not isinstance(dyn, Mapping) or not qmirror.is_qemu(dyn) \
                or not dyn.get("remote-ip"):
            continue
        try:
            _export, host, port = qmirror.guest_nbd(disk)
        except BlockDeviceError:
            continue
        moves[(host, port)] = str(dyn["remote-ip"])
    return moves


# --- functions run in the libvirt thread (conn first) --------------------------------

def migrate_domain(conn: Any, name: str, dest_uri: str, params: dict[str, Any],
                   flags: int, downtime: int | None = None) -> None:
    """Migrate our domain ``name`` (``downtime``: the longest pause allowed, ms);
    returns when the migration has ended."""
    dom = gone_means(not_running(name))(lookup_ours)(conn, name)
    if dom is None:
        not_running(name)()
    if downtime:
        try:
            dom.migrateSetMaxDowntime(downtime, 0)
        except Exception as err:  # libvirt.libvirtError: a driver without it migrates
            if code(err) != ERR_NO_SUPPORT:
                raise
    dom.migrateToURI3(dest_uri, params, flags)


@gone_means(None)
def job_stats(conn: Any, name: str) -> dict[str, Any] | None:
    """libvirt's statistics of the domain's current job; None where the driver has
    none."""
    dom = lookup_ours(conn, name)
    if dom is None:
        return None
    try:
        stats = dom.jobStats()
    except Exception as err:  # libvirt.libvirtError
        if code(err) in (ERR_NO_SUPPORT, ERR_OPERATION_INVALID):
            return None
        raise
    return dict(stats) if isinstance(stats, dict) else None


@gone_means(False)
def abort_job(conn: Any, name: str) -> bool:
    dom = lookup_ours(conn, name)
    if dom is None:
        return False
    dom.abortJob()
    return True


@dataclass
class Outgoing:
    """One migration from this node: done, or failed with libvirt's message."""

    target: str
    done: bool = False
    error: str | None = None


class KvmMigrations:
    """The migrations of one kvm hypervisor: outgoing by instance name, incoming
    names expected."""

    def __init__(self, kvm: KvmHypervisor) -> None:
        self.kvm = kvm
        self.outgoing: dict[str, Outgoing] = {}
        self.incoming: set[str] = set()

    async def info(self, name: str) -> str:
        """The running domain's XML."""
        xml = await self.kvm.domain_xml(name)
        if xml is None:
            raise HypervisorError(f"instance {name} is not running")
        return xml

    async def accept(self, name: str) -> None:
        if await self.kvm.instance_info(name) is not None:
            raise HypervisorError("Can't accept instance, already running")
        try:
            await self.kvm.run(self.kvm.prepare_console, name)
        except OSError as err:
            raise HypervisorError(f"Can't accept instance {name}: {err}") from None
        self.incoming.add(name)

    async def migrate(self, instance: Mapping[str, Any], target: str, live: bool) -> None:
        name = instance_name(instance)
        current = self.outgoing.get(name)
        if current is not None and not current.done and current.error is None:
            raise HypervisorError(f"Failed to migrate instance {name}: a migration to "
                                  f"{current.target} is in progress")
        if await self.kvm.instance_info(name) is None:
            raise HypervisorError(f"Failed to migrate instance {name}: not running")
        hv = instance.get("hvparams") or {}
        params: dict[str, Any] = {}
        port = hv.get("migration_port")
        if port:
            params[PARAM_URI] = MEMORY_URI.format(host=_host(target), port=int(port))
        bandwidth = hv.get("migration_bandwidth")
        if bandwidth:
            params[PARAM_BANDWIDTH] = int(bandwidth)  # MiB/s, as Ganeti's parameter
        moved = nbd_moves(instance)
        if moved:  # mirrored disks: the destination opens its own node's mirror daemon
            # (from the migratable document, as libvirt wants a destination's)
            xml = await self.kvm.call(f"Failed to read instance {name}", xml_of, name,
                                      XML_MIGRATABLE)
            dest_xml = domainxml.moved_nbd_hosts(xml, moved) if xml is not None else None
            if dest_xml is not None:
                params[PARAM_DEST_XML] = dest_xml
        flags = MIGRATE_PEER2PEER | MIGRATE_UNSAFE | (MIGRATE_LIVE if live else 0)
        downtime = hv.get("migration_downtime")
        record = Outgoing(target)
        self.outgoing[name] = record

        def ended(_: object) -> None:
            record.done = True

        def failed(failure: Failure) -> None:
            record.error = failure.getErrorMessage()
            log.warn("Migration of {instance} to {target} failed: {error}", instance=name,
                     target=target, error=record.error)

        d = self.kvm.virt.call_aside(migrate_domain, name,
                                     DEST_URI.format(host=_host(target)), params, flags,
                                     int(downtime) if downtime else None)
        d.addCallbacks(ended, failed)
        if record.error is not None:  # failed at once: no connection
            self.outgoing.pop(name, None)
            raise HypervisorError(f"Failed to migrate instance {name}: {record.error}")

    async def status(self, name: str) -> MigrationStatus:
        record = self.outgoing.get(name)
        if record is None:
            raise HypervisorError(f"no migration of instance {name} is in progress on "
                                  "this node")
        if record.error is not None:
            return MigrationStatus(constants.HV_MIGRATION_FAILED)
        if record.done:
            return MigrationStatus(constants.HV_MIGRATION_COMPLETED)
        stats = await self.kvm.call(f"Failed to get the migration status of {name}",
                                    job_stats, name)
        if record.error is not None:  # ended meanwhile
            return MigrationStatus(constants.HV_MIGRATION_FAILED)
        if record.done:
            return MigrationStatus(constants.HV_MIGRATION_COMPLETED)
        stats = stats or {}
        sent, total = stats.get("memory_processed"), stats.get("memory_total")
        return MigrationStatus(constants.HV_MIGRATION_ACTIVE,
                               int(sent) if sent is not None else None,
                               int(total) if total is not None else None)

    async def finalize_dst(self, name: str, success: bool) -> None:
        self.incoming.discard(name)
        if not success:
            await self.kvm.stop(name, 0, force=True)
            return
        xml = await self.kvm.domain_xml(name)
        meta = domainxml.read_metadata(xml) if xml is not None else None
        if meta is None:
            raise HypervisorError(f"Failed to finalize the migration of {name}: the "
                                  "instance does not run on this node")
        self.kvm.known[name] = meta

    async def finalize_source(self, name: str, success: bool) -> None:
        record = self.outgoing.pop(name, None)
        if success:
            self.kvm.known.pop(name, None)
            return
        if record is not None and not record.done and record.error is None:
            await self.kvm.call(f"Failed to cancel the migration of {name}", abort_job, name)

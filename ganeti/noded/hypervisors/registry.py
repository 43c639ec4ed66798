"""The table of hypervisors a node daemon serves, and the hypervisors of one daemon.

:data:`HYPERVISORS` maps Ganeti's hypervisor name to its class; a node daemon
makes one :class:`NodeHypervisors` from its environment at start-up (each
class's ``for_node``), and every node call gets its hypervisor from it by
name.  A hypervisor the node cannot serve (kvm without a libvirt connection)
stays in the table with the reason, which its calls fail with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from ganeti.core import constants
from ganeti.noded.hypervisors.base import (
    Hypervisor,
    HypervisorError,
    HypervisorUnavailable,
    NodeEnv,
)
from ganeti.noded.hypervisors.fake import FakeHypervisor
from ganeti.noded.hypervisors.kvm import KvmHypervisor

#: Ganeti's hypervisor name -> the class serving it on a node (in the order the node
#: reports them).
HYPERVISORS: Mapping[str, type[Hypervisor]] = {
    constants.HT_FAKE: FakeHypervisor,
    constants.HT_KVM: KvmHypervisor,
}


class NodeHypervisors:
    """The hypervisors of one node daemon, made once from ``env`` by the table;
    ``made`` gives ready ones by name instead (a daemon's kvm, tests)."""

    def __init__(self, env: NodeEnv, table: Mapping[str, type[Hypervisor]] = HYPERVISORS,
                 made: Mapping[str, Hypervisor] | None = None) -> None:
        self.env = env
        self._served: dict[str, Hypervisor] = {}
        self._missing: dict[str, str] = {}
        for name, cls in table.items():
            given = (made or {}).get(name)
            if given is not None:
                self._served[name] = given
                continue
            try:
                self._served[name] = cls.for_node(env)
            except HypervisorUnavailable as err:
                self._missing[name] = str(err)

    def get(self, name: object) -> Hypervisor:
        """The hypervisor ``name``; HypervisorError saying why it cannot be used."""
        if isinstance(name, str) and name in self._served:
            return self._served[name]
        if isinstance(name, str) and name in self._missing:
            raise HypervisorUnavailable(self._missing[name])
        if name in constants.HYPER_TYPES:
            raise HypervisorUnavailable(f"Hypervisor {name} is not available on this node")
        raise HypervisorError(f"Unknown hypervisor type {name!r:.40}")

    def find(self, name: str) -> Hypervisor | None:
        """The hypervisor ``name`` if this node serves it."""
        return self._served.get(name)

    def served(self) -> list[Hypervisor]:
        """Every hypervisor this node serves, in the table's order."""
        return list(self._served.values())

    def serial_console(self, name: str) -> str | None:
        """Where the serial console of instance ``name`` is served on this node (the
        first hypervisor that has one for it), None if nowhere."""
        for hv in self._served.values():
            path = hv.serial_console(name)
            if path is not None:
                return path
        return None

    @property
    def kvm(self) -> KvmHypervisor | None:
        """The kvm hypervisor if served (the block device calls tell its guests about
        grown disks)."""
        return cast("KvmHypervisor | None", self._served.get(constants.HT_KVM))

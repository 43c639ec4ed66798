"""Two in-process node daemons with a mirrored disk between them, for the drbd tests.

The nodes answer through the real node handlers (:class:`~tests.fakes.nodes.FakeNodeNet`)
on loopback addresses of their own, and their mirrors really listen and connect
(the reactor of the test); time (handshake bounds, resync) is a :class:`Clock`.
Their volumes are the fake ``lvm``'s, one volume group per node so that both
sides may use the same volume names, as Ganeti's do.
"""

import random
import socket

from twisted.internet.task import Clock

from ganeti.noded.bdev import lvm
from ganeti.rpc.client import NodeTarget
from tests.fakes.fakelvm import FakeLvm
from tests.fakes.nodes import FakeNodeNet

SECRET = "0123456789abcdef0123456789abcdef01234567"


def free_port(host):
    """A TCP port nothing listens on at ``host`` now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class Pair:
    """Nodes ``a`` (primary) and ``b`` (secondary), and the disk dicts each gets."""

    def __init__(self, case, size=64, rate=1024):
        self.case = case
        self.clock = Clock()
        self.clock.advance(1000)
        base = f"127.{random.randint(100, 250)}.{random.randint(1, 250)}"
        self.ip = {"a": f"{base}.1", "b": f"{base}.2"}
        self.vg = {"a": "vga", "b": "vgb"}
        self.fake = FakeLvm.install(case, vgs={
            "vga": {"size": 4096, "pvs": ["/dev/sda"]},
            "vgb": {"size": 4096, "pvs": ["/dev/sdb"]}})
        case.patch(lvm, "dm_available", lambda: False)
        self.net = FakeNodeNet(case.mktemp(), self.clock)
        self.name = {"a": "nodea.test", "b": "nodeb.test"}
        for side in "ab":
            self.net.add(self.name[side], self.ip[side])
        case.addCleanup(self.net.close)
        self.port = free_port(self.ip["a"])
        self.size = size
        self.rate = rate
        self.minor = {"a": 0, "b": 1}
        self.lv = "u1.disk0"

    def other(self, side):
        return "b" if side == "a" else "a"

    def children(self, side, lv=None):
        lv = lv or self.lv
        vg = self.vg[side]
        return [{"dev_type": "plain", "logical_id": [vg, f"{lv}_data"], "size": self.size,
                 "params": {"stripes": 1}, "dynamic_params": {}},
                {"dev_type": "plain", "logical_id": [vg, f"{lv}_meta"], "size": 128,
                 "params": {"stripes": 1}, "dynamic_params": {}}]

    def disk(self, side, port="default", secret=SECRET, minor=None):
        """The drbd disk as ``side`` gets it (its own dynamic parameters)."""
        other = self.other(side)
        port = self.port if port == "default" else port
        lid = ["uuid-a", "uuid-b", port, self.minor["a"], self.minor["b"], secret]
        return {"dev_type": "drbd", "logical_id": lid, "size": self.size,
                "uuid": "disk-uuid-0", "iv_name": "disk/0",
                "params": {"resync-rate": self.rate, "protocol": "C"},
                "dynamic_params": {"local-ip": self.ip[side], "remote-ip": self.ip[other],
                                   "local-minor": self.minor[side] if minor is None
                                   else minor,
                                   "remote-minor": self.minor[other]},
                "children": self.children(side)}

    async def call(self, side, name, args):
        """The result of a call on ``side``."""
        return await self.net.call_one(NodeTarget(self.name[side], self.ip[side], False),
                                       name, args)

    async def direct(self, side, name, args):
        """A call's handler run on ``side`` with wire arguments as they are (what the
        master's encoders would have made); RPCFail propagates."""
        paths = self.net.paths(self.name[side])
        return await self.net.handlers[name](self.net._context(paths), *args)

    async def both(self, name, args_of):
        """The same call on both sides at once (a multi-node call); their results."""
        from twisted.internet import defer
        ds = [defer.Deferred.fromCoroutine(self.call(side, name, args_of(side)))
              for side in "ab"]
        return await defer.gatherResults(ds)

    async def ok(self, side, name, args):
        result = await self.call(side, name, args)
        assert result.success, f"{name} on {side}: {result.fail_msg}"
        return result.payload

    async def fail(self, side, name, args):
        result = await self.call(side, name, args)
        assert not result.success, f"{name} on {side} succeeded: {result.payload}"
        return result.fail_msg

    async def create_volumes(self, side, lv=None):
        for child in self.children(side, lv):
            await self.ok(side, "blockdev_create",
                          [child, child["size"], "inst1", side == "a", "inst1", False])

    async def create(self, side):
        """Volumes, then the drbd device (on_primary on ``a``)."""
        await self.create_volumes(side)
        disk = self.disk(side)
        return await self.ok(side, "blockdev_create",
                             [disk, self.size, "inst1", side == "a", "inst1", False])

    async def find(self, side):
        return await self.ok(side, "blockdev_find", [self.disk(side)])

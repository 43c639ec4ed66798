"""A seeded fuzz of the confd server: random, mutated, mis-signed, expired and
replayed datagrams never raise and never get a reply; valid ones always do."""

import json
import random

from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.confd import protocol
from ganeti.confd.server import ConfdProtocol
from tests.confd.test_server import KEY, NOW, answerer

NAMES = ["node1.example.test", "node2.example.test", "web1.example.test", "db1.example.test",
         "192.0.2.50", "192.0.2.60", "br1", "/cluster/cluster_name", "/nodes", "", "/", "~",
         "\u00e9", "x" * 300]


def random_query(rng):
    """A query of any shape, sensible or not."""
    kind = rng.randrange(6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice(NAMES)
    if kind == 2:
        return {str(rng.randrange(5)): rng.choice(NAMES) for _ in range(rng.randrange(3))}
    if kind == 3:
        return {"3": [rng.choice([0, 1, 2, 3, "1", None, True, -1]) for _ in range(3)]}
    if kind == 4:
        return {"2": [rng.choice(NAMES + [None, 5]) for _ in range(rng.randrange(4))],
                "0": rng.choice([None, "br1", 7])}
    return {"1": rng.choice([None, 1, [], {}, "192.0.2.60"]), "0": rng.choice(NAMES)}


class Fuzzer:
    """Produces datagrams and knows which of them deserve a reply."""

    def __init__(self, seed, now=NOW):
        self.rng = random.Random(seed)
        self.now = now
        self.sent_valid: list[bytes] = []
        self.counter = 0

    def valid(self):
        self.counter += 1
        rtype = self.rng.randrange(12)
        skew = self.rng.randint(-300, 300)
        return protocol.pack_request(KEY, rtype, random_query(self.rng), f"rs{self.counter}",
                                     self.now + skew)

    def mutate(self, data):
        data = bytearray(data)
        for _ in range(self.rng.randint(1, 4)):
            op = self.rng.randrange(4)
            pos = self.rng.randrange(len(data) + 1)
            if op == 0 and data:
                data[min(pos, len(data) - 1)] ^= 1 << self.rng.randrange(8)
            elif op == 1:
                del data[pos:pos + self.rng.randint(1, 8)]
            elif op == 2:
                n = self.rng.randint(1, 8)
                data[pos:pos] = bytes(self.rng.randrange(256) for _ in range(n))
            else:
                data[pos:pos] = self.rng.choice([b'"', b"{", b"}", b",", b"\\", b"null", b"1e999"])
        return bytes(data)

    def next(self):
        """``(datagram, kind)``."""
        choice = self.rng.randrange(8)
        if choice == 0:
            return bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(64))), "random"
        if choice == 1:
            return self.mutate(self.valid()), "mutated"
        if choice == 2:
            return protocol.pack_request(b"not the key", 0, None, "r", self.now), "mis-signed"
        if choice == 3:
            skew = self.rng.choice([-1, 1]) * self.rng.randint(301, 10**9)
            return protocol.pack_request(KEY, 0, None, "r", self.now + skew), "expired"
        if choice == 4 and self.sent_valid:
            return self.rng.choice(self.sent_valid), "replayed"
        if choice == 5:
            msg = json.dumps({"protocol": self.rng.choice([0, 1, 2, "1"]),
                              "type": self.rng.choice([-1, 0, 5, 12, "3", None]),
                              "query": self.rng.choice([None, [1], 2.5, "q"]),
                              "rsalt": self.rng.choice(["r", 1, None])})
            return protocol.sign(KEY, msg, str(int(self.now))), "signed-maybe-malformed"
        data = self.valid()
        self.sent_valid.append(data)
        return data, "valid"


def deserves_reply(data, seen, now=NOW):
    """The independent oracle: a correctly signed, fresh, well-formed, new request."""
    if len(data) > 61440:
        return False
    try:
        msg, salt, digest = protocol.unpack_signed(KEY, data)
        if abs(protocol.salt_time(salt) - now) > 300:
            return False
        protocol.parse_request(msg)
    except protocol.BadMessage:
        return False
    if (salt, digest) in seen:
        return False
    seen.add((salt, digest))
    return True


def run_fuzz(count, seed=1234):
    """Feed ``count`` datagrams; returns (answered, dropped, mismatches)."""
    clock = Clock()
    clock.advance(NOW)
    proto = ConfdProtocol(clock, KEY, answerer())
    fuzzer = Fuzzer(seed)
    seen: set = set()
    mismatches = []
    for _ in range(count):
        data, kind = fuzzer.next()
        reply = proto.handle(data, ("127.0.0.1", 1))
        expected = deserves_reply(data, seen)
        if (reply is not None) != expected:
            mismatches.append((kind, data[:200]))
        elif reply is not None:
            msg, salt = protocol.unpack(KEY, reply)
            protocol.parse_reply(msg)
            if kind == "replayed":
                mismatches.append((kind, data[:200]))
    return proto.stats, mismatches


class FuzzTest(SynchronousTestCase):
    def test_fuzz(self):
        stats, mismatches = run_fuzz(20_000)
        self.assertEqual(mismatches, [])
        self.assertEqual(stats.received, 20_000)
        self.assertGreater(stats.answered, 2_000)
        self.assertGreater(stats.dropped, 10_000)

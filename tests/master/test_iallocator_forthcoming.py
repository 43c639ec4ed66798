"""ganeti.master.iallocator.build with forthcoming instances (issue 30): the allocator
input lists a reservation like any instance, with ``"forthcoming": true`` (the key
htools 3.0.2 reads, default false), and what it holds is in no node's live figures."""

from __future__ import annotations

import json

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import constants as c
from ganeti.core.placement import solve, wire
from ganeti.core.placement.state import ClusterState
from ganeti.master.iallocator import build
from tests.fakes.instances import add_instance
from tests.master.test_iallocator import allocate, live, three_node_config


class ForthcomingInputTest(SynchronousTestCase):
    def setUp(self):
        self.cfg = three_node_config()
        add_instance(self.cfg, "res.test", "node2.test", c.DT_DRBD8, disks=(4096,),
                     snode="node1.test", beparams={"maxmem": 4096, "minmem": 4096},
                     forthcoming=True)

    def test_flag_only_on_the_reservation(self):
        ialloc = build.build_input(self.cfg, allocate(c.DT_DRBD8), live(self.cfg))
        data = json.loads(json.dumps(wire.render_input(ialloc)))
        flagged = {n for n, i in data["instances"].items() if "forthcoming" in i}
        self.assertEqual(flagged, {"res.test"})
        self.assertIs(data["instances"]["res.test"]["forthcoming"], True)
        self.assertEqual(data["instances"]["res.test"]["nodes"], ["node2.test", "node1.test"])
        self.assertEqual(wire.render_input(wire.parse_input(data)), data)

    def test_a_reservation_claims_no_live_memory(self):
        # an instance up and using nothing yet would claim its memory; a reservation not
        running = {self.cfg.node_by_name("node2.test").uuid: {}}
        cluster = build.build_cluster(self.cfg, live(self.cfg), running, c.DT_DRBD8)
        node2 = cluster.nodes["node2.test"].resources
        self.assertEqual((node2.free_memory, node2.i_pri_up_memory), (6000, 0))
        self.assertEqual(node2.i_pri_memory, 128 + 4096)  # Ganeti's i_pri_memory: all

    def test_the_allocator_counts_it(self):
        state = ClusterState(build.build_cluster(self.cfg, live(self.cfg), {}, c.DT_DRBD8))
        node2 = state.nodes[state.index["node2.test"]]
        self.assertNotIn("res.test", node2.plist)
        self.assertEqual(node2.f_mem_forth, 6000 - 128 - 4096)  # idle (down) and res
        # 3000 MiB fit on node2's free memory, not beside the reservation: node1 it is
        ialloc = build.build_input(self.cfg, allocate(c.DT_FILE, 3000), live(self.cfg))
        answer = solve.answer(ialloc, solve.Options(capacity_checks=False))
        self.assertTrue(answer.success, answer.info)
        self.assertEqual(list(answer.result), ["node1.test"])
        self.assertIn("FailMem: 1", answer.info)

"""ganeti.core.placement.balance: hbal's greedy moves, and the ``balance`` request (ours).

Oracle: ``hbal -t`` (Debian's htools 3.0.2) on the same 10-node cluster
(tests/data/iallocator/gen10-evacuate-all.in.json.gz, saved in htools' text
format with ``hbal -I FILE -S OUT``: ``hbal -I`` itself loads an iallocator
file's instances twice, see test_placement_metric) printed "Initial score:
18.57631768" and "Cluster score improved from 18.57631768 to 0.81961770"
after 21 moves.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core.errors import ParseError, ResultValidationError
from ganeti.core.placement import balance, moves, requests, solve, wire
from ganeti.core.placement.allocate import Options
from ganeti.core.placement.state import ClusterState
from tests.core import placement_clusters as gen
from tests.core.placement_check import violations

DATA = Path(__file__).resolve().parent.parent / "data" / "iallocator"
HBAL_INITIAL = 18.57631768
HBAL_FINAL = 0.81961770

_CACHE: dict[tuple[int, int], tuple[wire.AllocatorInput, dict]] = {}


def recorded_input() -> dict:
    data = json.loads(gzip.decompress((DATA / "gen10-evacuate-all.in.json.gz").read_bytes()))
    data["request"] = {"type": "balance", "max_moves": 0, "group": None, "min_gain": 0.0}
    return data


def balanced(max_moves: int = 0, min_gain: float = 0.0) -> tuple[wire.AllocatorInput, dict]:
    """The recorded cluster's balance answer (computed once per arguments)."""
    key = (max_moves, int(min_gain * 1000))
    if key not in _CACHE:
        data = recorded_input()
        data["request"].update(max_moves=max_moves, min_gain=min_gain)
        ialloc = wire.parse_input(data)
        _CACHE[key] = ialloc, json.loads(wire.render_answer(solve.answer(ialloc)))
    return _CACHE[key]


class BalanceTest(SynchronousTestCase):
    def test_moves_are_hbals(self):
        # tests/data/iallocator/gen10-balance.hbal.txt: `hbal -t` on the same cluster
        text = (DATA / "gen10-balance.hbal.txt").read_text()
        hbal = [line.split() for line in text.splitlines()
                if re.match(r"^ +\d+\. ", line)]
        _, answer = balanced()
        ours = answer["result"]["moves"]
        self.assertEqual(len(ours), len(hbal))
        self.assertEqual(len(hbal), 21)
        for (name, nodes, _, score), line in zip(ours, hbal, strict=True):
            self.assertEqual(name.split(".")[0], line[1])
            self.assertEqual([n.split(".")[0] for n in nodes], line[4].split(":"))
            self.assertLess(abs(score - float(line[5])), 1e-6)

    def test_scores_as_hbal_and_at_least_as_good(self):
        _, answer = balanced()
        self.assertTrue(answer["success"], answer)
        result = answer["result"]
        self.assertLess(abs(result["initial_score"] - HBAL_INITIAL), 1e-6)
        self.assertLess(abs(result["final_score"] - HBAL_FINAL), 1e-6)
        self.assertIn("cluster score improved from 18.57631768", answer["info"])

    def test_score_never_increases(self):
        _, answer = balanced()
        result = answer["result"]
        scores = [result["initial_score"]] + [m[3] for m in result["moves"]]
        self.assertGreater(len(scores), 5)
        for before, after in zip(scores, scores[1:], strict=False):
            self.assertLess(after, before)
        self.assertEqual(result["final_score"], scores[-1])

    def test_moves_replay_to_the_scores_and_keep_the_rules(self):
        ialloc, answer = balanced()
        cluster = ialloc.cluster
        state = ClusterState(cluster)
        placed = {}
        templates = set()
        for name, nodes, kind, score in answer["result"]["moves"]:
            inst = state.insts[name]
            templates.add(inst.template)
            before = tuple(state.nodes[i].name for i in (inst.pnode, inst.snode) if i >= 0)
            self.assertEqual(tuple(nodes), moves.MOVES[kind].nodes(
                before[0], before[1] if len(before) > 1 else None,
                nodes[0] if kind in (moves.FAILOVER_TO_ANY, moves.REPLACE_PRIMARY,
                                     moves.REPLACE_AND_FAILOVER) else nodes[-1]))
            pdx = state.index[nodes[0]]
            sdx = state.index[nodes[1]] if len(nodes) > 1 else -1
            self.assertIsNone(state.move(name, pdx, sdx, force=True, force_secondary=True))
            self.assertLess(abs(state.score() - score), 1e-6)
            placed[name] = nodes
        self.assertEqual(violations(cluster, placed), [])
        self.assertNotIn("plain", templates)

    def test_the_answer_passes_the_result_check(self):
        ialloc, answer = balanced()
        checked = wire.parse_answer(json.dumps(answer), ialloc)
        self.assertIsInstance(checked.result, requests.BalanceResult)
        self.assertEqual(len(checked.result.moves), len(answer["result"]["moves"]))

    def test_max_moves_and_min_gain(self):
        _, three = balanced(max_moves=3)
        _, full = balanced()
        self.assertEqual(three["result"]["moves"], full["result"]["moves"][:3])
        _, none = balanced(min_gain=100.0)
        self.assertEqual(none["result"]["moves"], [])
        self.assertEqual(none["result"]["initial_score"], none["result"]["final_score"])

    def test_one_group_only(self):
        data = gen.cluster_input(8, groups=2, per_node=6, seed=11)
        data["request"] = {"type": "balance", "max_moves": 4, "group": "group1",
                           "min_gain": 0.0}
        ialloc = wire.parse_input(data)
        answer = solve.answer(ialloc)
        self.assertTrue(answer.success, answer.info)
        for move in answer.result.moves:
            self.assertTrue(all(data["nodes"][n]["group"].endswith("1") for n in move.nodes))
            inst = data["instances"][move.instance]
            self.assertTrue(all(data["nodes"][n]["group"].endswith("1")
                                for n in inst["nodes"]))
        data["request"]["group"] = "nope"
        self.assertFalse(solve.answer(wire.parse_input(data)).success)

    def test_exact_path_agrees(self):
        ialloc, answer = balanced(max_moves=2)
        state = ClusterState(ialloc.cluster)
        balancer = balance.Balancer(state, Options())
        balancer.exact = True
        result = balancer.run(2, 0.0)
        self.assertEqual([m.to_wire() for m in result.moves], answer["result"]["moves"])


class BalanceRequestTest(SynchronousTestCase):
    def test_wire_round_trip(self):
        req = requests.Balance(max_moves=5, group="g", min_gain=0.5)
        self.assertEqual(requests.request_from_wire(req.to_wire()), req)
        self.assertEqual(requests.Balance.from_wire({"type": "balance"}), requests.Balance())
        with self.assertRaises(ParseError):
            requests.Balance.from_wire({"type": "balance", "max_moves": -1})
        with self.assertRaises(ParseError):
            requests.Balance.from_wire({"type": "balance", "group": 3})

    def test_result_check(self):
        ialloc, answer = balanced(max_moves=1)
        cluster = ialloc.cluster
        good = answer["result"]
        req = requests.Balance()
        self.assertEqual(req.check_result(good, cluster).moves[0].instance, good["moves"][0][0])
        for bad in ({**good, "moves": [[good["moves"][0][0], ["nowhere"], "failover", 1.0]]},
                    {**good, "moves": [["ghost", good["moves"][0][1], "failover", 1.0]]},
                    {**good, "moves": [[good["moves"][0][0], good["moves"][0][1], "teleport",
                                        1.0]]},
                    {"initial_score": 1.0, "moves": []}, []):
            with self.assertRaises(ResultValidationError):
                req.check_result(bad, cluster)

"""Properties of node-evacuate, change-group and balance on random clusters (Hypothesis).

No answer breaks a hard rule (checked by tests/core/placement_check.py, which
shares nothing with the allocator), the evacuated node is never a target, every
instance of the request is either moved or named as failed, balance never raises
the score, and an answer is the same every time for the same input.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core.placement import solve, wire
from ganeti.core.placement.allocate import Options
from tests.core import placement_clusters as gen
from tests.core.placement_check import violations

MIXES = (
    (("drbd", 0.5), ("plain", 0.3), ("diskless", 0.2)),
    (("drbd", 1.0),),
    (("diskless", 0.5), ("sharedfile", 0.3), ("file", 0.2)),
)


def run(data: dict, options: Options) -> tuple[wire.AllocatorInput, dict, str]:
    ialloc = wire.parse_input(data)
    text = wire.render_answer(solve.answer(ialloc, options))
    again = wire.render_answer(solve.answer(wire.parse_input(data), options))
    if text != again:
        raise AssertionError("not deterministic")
    return ialloc, json.loads(text), text


class EvacuationPropertiesTest(SynchronousTestCase):
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.integers(2, 8), st.integers(1, 2), st.integers(0, 10_000),
           st.sampled_from(MIXES), st.sampled_from(("primary-only", "secondary-only", "all")),
           st.sampled_from((0.3, 0.6, 0.9)), st.booleans(), st.booleans(), st.booleans())
    def test_evacuation(self, nodes, groups, seed, mix, mode, fill, offline, soft, capacity):
        data = gen.cluster_input(nodes, groups=groups, per_node=4, seed=seed, mix=mix,
                                 memory=16384, disk=200_000, fill=fill)
        victim = "node0001.example.com"
        data["request"] = gen.evacuate_request(data, victim, mode)
        if offline:
            data["nodes"][victim]["offline"] = True
        ialloc, answer, _ = run(data, Options(capacity_checks=capacity,
                                              ignore_soft_errors=soft))
        self.assertTrue(answer["success"], answer["info"])
        moved, failed, jobs = answer["result"]
        wire.parse_answer(json.dumps(answer), ialloc)
        self.assertEqual(sorted([m[0] for m in moved] + [f[0] for f in failed]),
                         sorted(data["request"]["instances"]))
        self.assertEqual(len(jobs), len(moved))
        self.assertEqual(violations(ialloc.cluster, {m[0]: m[2] for m in moved}), [])
        for name, _, new in moved:
            old = data["instances"][name]["nodes"]
            if mode == "primary-only":
                self.assertNotEqual(new[0], victim)
            elif mode == "secondary-only":
                self.assertNotIn(victim, new[1:])
            else:
                self.assertNotIn(victim, new)
            self.assertNotEqual(new, old)

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.integers(2, 8), st.integers(0, 10_000), st.sampled_from(MIXES),
           st.sampled_from((0.3, 0.6, 0.9)), st.booleans())
    def test_change_group(self, nodes, seed, mix, fill, capacity):
        data = gen.cluster_input(nodes, groups=2, per_node=3, seed=seed, mix=mix,
                                 memory=16384, disk=200_000, fill=fill)
        group0 = "00000000-0000-4000-8000-000000000000"
        data["request"] = {"type": "change-group", "target_groups": [], "instances": sorted(
            n for n, i in data["instances"].items()
            if data["nodes"][i["nodes"][0]]["group"] == group0)}
        ialloc, answer, _ = run(data, Options(capacity_checks=capacity))
        moved, failed, _ = answer["result"]
        self.assertEqual(violations(ialloc.cluster, {m[0]: m[2] for m in moved}), [])
        for _, _, new in moved:
            self.assertTrue(all(data["nodes"][n]["group"] != group0 for n in new))

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.integers(2, 6), st.integers(0, 10_000), st.sampled_from(MIXES),
           st.sampled_from((0.3, 0.6, 0.9)), st.booleans())
    def test_balance(self, nodes, seed, mix, fill, soft):
        data = gen.cluster_input(nodes, per_node=4, seed=seed, mix=mix, memory=16384,
                                 disk=200_000, fill=fill)
        data["request"] = {"type": "balance", "max_moves": 6, "group": None, "min_gain": 0.0}
        ialloc, answer, _ = run(data, Options(ignore_soft_errors=soft))
        result = answer["result"]
        scores = [result["initial_score"]] + [m[3] for m in result["moves"]]
        for before, after in zip(scores, scores[1:], strict=False):
            self.assertLess(after, before)
        self.assertLessEqual(result["final_score"], result["initial_score"])
        final = {}
        for name, nodes_after, _, _ in result["moves"]:
            final[name] = nodes_after
        self.assertEqual(violations(ialloc.cluster, final), [])

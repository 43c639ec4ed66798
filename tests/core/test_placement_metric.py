"""ganeti.core.placement.metric / state: htools 3.0.2's cluster score, exactly.

Oracles: ``hinfo -I FILE`` (every term and the score; recorded in
tests/data/iallocator/hinfo-terms.json, and run live by the subprocess test)
and hail's answers (the score it prints for the nodes it chose).  hinfo 3.0.2
loads an iallocator file twice over (``IAlloc.loadData`` merges the instances
into the nodes, then ``loadExternalData`` merges them again), so its figures
are those of the cluster with every instance counted twice: the comparison
with hinfo doubles the instances; hail loads once, and the comparison with
hail's score does not.
"""

from __future__ import annotations

import gzip
import json
import random
import re
import shutil
import subprocess
import unittest
from dataclasses import replace
from pathlib import Path

import pytest
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core.placement import metric, model, wire
from ganeti.core.placement.nodestate import NO_NODE
from ganeti.core.placement.state import ClusterState

DATA = Path(__file__).resolve().parent.parent / "data" / "iallocator"
RECORDED = json.loads((DATA / "hinfo-terms.json").read_text())


def load(name: str) -> dict:
    path = DATA / name
    raw = gzip.decompress(path.read_bytes()) if name.endswith(".gz") else path.read_bytes()
    return json.loads(raw)


def doubled(cluster: model.Cluster) -> model.Cluster:
    """The cluster as hinfo -I sees it: every instance twice."""
    insts = dict(cluster.instances)
    for name, inst in cluster.instances.items():
        insts[f"{name}#again"] = replace(inst, name=f"{name}#again")
    return replace(cluster, instances=insts)


def hail_score(info: str) -> float:
    return float(re.search(r"score: ([\d.]+)", info).group(1))


class RecordedHinfoTest(SynchronousTestCase):
    """Every term and the score equal hinfo's recorded figures to 1e-6."""

    def test_every_recorded_input(self):
        self.assertGreaterEqual(len(RECORDED), 9)
        for name, figures in sorted(RECORDED.items()):
            state = ClusterState(doubled(wire.parse_input(load(name)).cluster))
            ours = state.term_values()
            self.assertEqual(set(ours), set(figures["terms"]), name)
            for term, value in figures["terms"].items():
                self.assertAlmostEqual(ours[term], value, delta=1e-6, msg=f"{name} {term}")
            self.assertAlmostEqual(state.score(), figures["score"], delta=1e-6, msg=name)

    def test_weights_are_htools(self):
        self.assertEqual(len(metric.TERMS), 20)
        self.assertEqual(metric.WEIGHTS[metric.T_OFFLINE_PRI], 16.0)
        self.assertEqual(metric.WEIGHTS[metric.T_OFFLINE_ALL], 4.0)
        self.assertEqual(metric.WEIGHTS[metric.T_RESERVED_MEM_RTOTAL], 0.25)
        self.assertEqual(metric.NAMES[0], "free_mem_cv")


class HailScoreTest(SynchronousTestCase):
    """Placing an instance where hail placed it gives the score hail printed."""

    def test_hail_answers(self):
        for name in ("allocate", "gen10-allocate-drbd", "gen10-allocate-plain"):
            suffix = ".in.json" if name == "allocate" else ".in.json.gz"
            ialloc = wire.parse_input(load(name + suffix))
            hail = json.loads((DATA / f"{name}.hail.json").read_text())
            state = ClusterState(ialloc.cluster)
            inst = state.inst_from_request(ialloc.request)
            nodes = [state.index[n] for n in hail["result"]]
            self.assertIsNone(state.place(inst, *nodes))
            self.assertAlmostEqual(state.score(), hail_score(hail["info"]), delta=1e-8,
                                   msg=name)


class IncrementalTest(SynchronousTestCase):
    """Incremental statistics equal statistics computed afresh after any changes."""

    def test_random_changes(self):
        ialloc = wire.parse_input(load("gen10-tags.in.json.gz"))
        state = ClusterState(ialloc.cluster)
        rng = random.Random(29)
        online = state.candidates(None)
        names = sorted(state.insts)
        moved = 0
        for step in range(60):
            name = rng.choice(names)
            inst = state.insts[name]
            if inst.pnode == NO_NODE or inst.pnode not in online:
                continue
            others = [i for i in online if i != inst.pnode]
            if inst.mirrored:
                p, s = rng.sample(others, 2)
                reason = state.move(name, p, s, force=True, force_secondary=True)
            else:
                reason = state.move(name, rng.choice(others), force=True)
            moved += reason is None
            fresh = state.stats_of(range(len(state.nodes)))
            for ours, new in zip(state.stats.values(), fresh.values(), strict=True):
                self.assertAlmostEqual(ours, new, delta=1e-9, msg=f"step {step}")
        self.assertGreater(moved, 20)

    def test_remove_then_place_restores_the_score(self):
        state = ClusterState(wire.parse_input(load("gen10-allocate-drbd.in.json.gz")).cluster)
        before = state.score()
        inst = state.insts[sorted(state.insts)[0]]
        where = (inst.pnode, inst.snode)
        state.remove(inst.name)
        self.assertNotAlmostEqual(state.score(), before, delta=1e-9)
        self.assertIsNone(state.place(inst, *where, force=True))
        self.assertAlmostEqual(state.score(), before, delta=1e-9)


@pytest.mark.subprocess
class LiveHinfoTest(SynchronousTestCase):
    """hinfo run now on every input file agrees with our terms (and the recording)."""

    def test_hinfo(self):
        if shutil.which("hinfo") is None:
            raise unittest.SkipTest("Debian's htools are not installed (ganeti-htools-3.0)")
        tmp = Path(self.mktemp())
        tmp.mkdir()
        for name in sorted(RECORDED):
            path = tmp / name.replace(".gz", "")
            path.write_text(json.dumps(load(name)))
            out = subprocess.run(["hinfo", "-I", str(path)], capture_output=True, text=True,
                                 check=True, timeout=120).stdout
            terms = {k: float(v) for k, v in
                     re.findall(r"^\s+(\w+)\s+([-\d.e]+)\s+x", out, re.M)}
            ours = ClusterState(doubled(wire.parse_input(load(name)).cluster)).term_values()
            for term, value in terms.items():
                self.assertAlmostEqual(ours[term], value, delta=1e-6, msg=f"{name} {term}")
            score = float(re.search(r"Cluster score: (\S+)", out).group(1))
            self.assertAlmostEqual(score, RECORDED[name]["score"], delta=1e-8)

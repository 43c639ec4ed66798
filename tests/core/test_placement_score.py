"""ganeti.core.placement.score: htools' score of small models built by hand."""

from __future__ import annotations

from dataclasses import replace

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core.placement import model, score

SPEC = model.ISpec(128, 1, 1024, 1, 1, 1)
POLICY = model.IPolicy(minmax=((model.ISpec(0, 1, 0, 0, 0, 0),
                                model.ISpec(32768, 8, 1 << 20, 16, 8, 12)),),
                       std=SPEC, disk_templates=("plain", "drbd", "file"), vcpu_ratio=4.0,
                       spindle_ratio=32.0)


def node(name: str, memory: int = 4096, disk: int = 100_000, cpus: int = 4, **flags) -> model.Node:
    res = model.NodeResources(total_memory=memory, reserved_memory=0, free_memory=memory,
                              total_disk=disk, free_disk=disk, total_spindles=0,
                              free_spindles=0, total_cpus=cpus, reserved_cpus=1,
                              i_pri_memory=0, i_pri_up_memory=0)
    return model.Node(name=name, group="g", primary_ip="192.0.2.1", secondary_ip="192.0.2.1",
                      resources=res, **flags)


def cluster(*nodes: model.Node) -> model.Cluster:
    return model.Cluster(name="c", ipolicy=POLICY,
                         groups={"g": model.Group("g", "default", "preferred", POLICY)},
                         nodes={n.name: n for n in nodes}, instances={})


def inst(name: str, *nodes: str, memory: int = 1024, template: str = "plain",
         running: bool = True) -> model.Instance:
    return model.Instance(name=name, nodes=nodes, memory=memory, vcpus=2,
                          disk_template=template, disks=(model.Disk(10_000),),
                          admin_state="up" if running else "down")


class ScoreTest(SynchronousTestCase):
    def test_spread(self):
        self.assertEqual(score.spread([]), 0.0)
        self.assertEqual(score.spread([0.3]), 0.0)
        self.assertAlmostEqual(score.spread([0.0, 1.0]), 0.5)

    def test_even_cluster_scores_lower(self):
        empty = cluster(node("a"), node("b"))
        self.assertEqual(score.score(empty), 0.0)
        even = empty.with_instance(inst("i1", "a")).with_instance(inst("i2", "b"))
        lopsided = empty.with_instance(inst("i1", "a")).with_instance(inst("i2", "a"))
        self.assertEqual(score.score(even), 0.0)
        self.assertGreater(score.score(lopsided), score.score(even))
        terms = score.score_terms(lopsided)
        self.assertAlmostEqual(terms["free_mem_cv"], 0.25)  # free 50 % and 100 %
        self.assertAlmostEqual(terms["vcpu_ratio_cv"], 0.5)  # 4 of 4 CPUs and 0
        self.assertAlmostEqual(score.score(lopsided),
                               sum(t.weight * terms[t.name] for t in score.TERMS))

    def test_n1_failure_counts(self):
        base = cluster(node("a"), node("b", memory=1024))
        mirrored = base.with_instance(inst("big", "a", "b", memory=2048, template="drbd"))
        self.assertEqual(score.reserved_memory(mirrored, "b"), 2048)
        self.assertEqual(score.n1_failures(mirrored), 1)
        # htools reserves memory for stopped instances too, not for offline ones
        stopped = base.with_instance(inst("big", "a", "b", memory=2048, template="drbd",
                                          running=False))
        self.assertEqual(score.n1_failures(stopped), 1)
        offline = replace(stopped, instances={"big": replace(stopped.instances["big"],
                                                             admin_state="offline")})
        self.assertEqual(score.reserved_memory(offline, "b"), 0)
        self.assertEqual(score.n1_failures(offline), 0)

    def test_offline_and_drained_nodes(self):
        base = cluster(node("a"), node("b"), node("c"))
        placed = base.with_instance(inst("i1", "a", "b", template="drbd"))
        placed = placed.with_instance(inst("i2", "c"))
        gone = replace(placed, nodes={**placed.nodes,
                                      "b": replace(placed.nodes["b"], offline=True),
                                      "c": replace(placed.nodes["c"], drained=True)})
        terms = score.score_terms(gone)
        self.assertEqual((terms["offline_all_cnt"], terms["offline_pri_cnt"]), (2.0, 1.0))
        self.assertGreater(score.score(gone), score.score(placed))

"""Properties of the built-in allocator on random clusters (Hypothesis).

No answer breaks a hard rule -- checked here by code that shares nothing with the
allocator's own checks: the chosen nodes exist, are online, not drained,
vm_capable, in an allocable group, distinct and in one group for drbd, and have
the memory and disk the instance needs (free memory from the input, less what the
cluster's running primaries already hold beyond it, is left positive) -- and an
answer is the same every time for the same input.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core.placement import model, requests, solve, wire
from ganeti.core.placement.allocate import Options

POLICY = model.IPolicy(minmax=((model.ISpec(0, 1, 0, 0, 0, 0),
                                model.ISpec(1 << 20, 64, 1 << 30, 16, 8, 64)),),
                       std=model.ISpec(128, 1, 1024, 1, 1, 1),
                       disk_templates=("plain", "drbd", "diskless", "file"),
                       vcpu_ratio=8.0, spindle_ratio=64.0)
TEMPLATES = ("plain", "drbd", "diskless")


@st.composite
def clusters(draw):
    n_groups = draw(st.integers(1, 2))
    policies = [draw(st.sampled_from(("preferred", "last_resort", "unallocable")))
                for _ in range(n_groups)]
    groups = {f"g{i}": model.Group(f"g{i}", f"group{i}", policies[i], POLICY)
              for i in range(n_groups)}
    nodes = {}
    for i in range(draw(st.integers(1, 7))):
        memory = draw(st.sampled_from((2048, 4096, 8192)))
        disk = draw(st.sampled_from((20_000, 50_000)))
        res = model.NodeResources(total_memory=memory, reserved_memory=512,
                                  free_memory=memory - 512, total_disk=disk, free_disk=disk,
                                  total_spindles=0, free_spindles=0, total_cpus=4,
                                  reserved_cpus=1, i_pri_memory=0, i_pri_up_memory=0)
        flags = draw(st.sampled_from(("ok", "ok", "ok", "offline", "drained", "novm")))
        name = f"n{i}"
        nodes[name] = model.Node(
            name=name, group=f"g{draw(st.integers(0, n_groups - 1))}",
            primary_ip="192.0.2.1", secondary_ip="192.0.2.1",
            resources=None if flags == "offline" else res, offline=flags == "offline",
            drained=flags == "drained", vm_capable=flags != "novm",
            ndparams={"spindle_count": 1, "exclusive_storage": False})
    cluster = model.Cluster(name="c", ipolicy=POLICY, groups=groups, nodes=nodes,
                            instances={})
    usable = [n for n in nodes.values() if n.usable]
    for k in range(draw(st.integers(0, 6))):
        if not usable:
            break
        template = draw(st.sampled_from(TEMPLATES))
        first = draw(st.sampled_from(usable))
        peers = [n for n in usable if n.group == first.group and n.name != first.name]
        if template == "drbd" and not peers:
            template = "plain"
        names = (first.name,) + ((draw(st.sampled_from(peers)).name,)
                                 if template == "drbd" else ())
        inst = model.Instance(name=f"i{k}", nodes=names, memory=draw(st.sampled_from(
            (256, 512, 1024))), vcpus=1, disk_template=template,
            disks=() if template == "diskless" else (model.Disk(2048),),
            admin_state=draw(st.sampled_from(("up", "down"))))
        try:
            cluster = cluster.with_instance(inst)
        except ValueError:
            continue
    return cluster


def requests_for(draw_template: str, memory: int, disk: int) -> requests.Allocate:
    return requests.Allocate(name="new", memory=memory, vcpus=1, disk_template=draw_template,
                             disks=() if draw_template == "diskless" else (model.Disk(disk),))


def broken_rules(cluster: model.Cluster, req: requests.Allocate, nodes: list[str]) -> list[str]:
    """The hard rules an allocation breaks, checked from the model alone."""
    problems = []
    want = 2 if req.disk_template == "drbd" else 1
    if len(nodes) != want or len(set(nodes)) != len(nodes):
        return [f"{len(nodes)} nodes for {req.disk_template}"]
    for name in nodes:
        node = cluster.nodes.get(name)
        if node is None:
            return [f"unknown node {name}"]
        if node.offline or node.drained or not node.vm_capable or node.resources is None:
            problems.append(f"{name} is not usable")
        if not cluster.groups[node.group].allocable:
            problems.append(f"{name}'s group is unallocable")
    if len({cluster.nodes[n].group for n in nodes}) != 1:
        problems.append("nodes in two groups")
    primary = cluster.nodes[nodes[0]].resources
    running = sum(i.memory for i in cluster.instances.values()
                  if i.primary == nodes[0] and i.running)
    if primary is not None:
        free = primary.total_memory - primary.reserved_memory - running
        if free - req.memory <= 0:
            problems.append("primary out of memory")
    if req.disk_template in ("plain", "drbd"):
        for name in nodes:
            res = cluster.nodes[name].resources
            if res is not None and res.free_disk - req.disk_space_total <= 0:
                problems.append(f"{name} out of disk")
    return problems


class PropertiesTest(SynchronousTestCase):
    @settings(max_examples=150, deadline=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(clusters(), st.sampled_from(TEMPLATES), st.sampled_from((512, 2048, 6000)),
           st.sampled_from((1024, 30_000)), st.booleans(), st.booleans())
    def test_no_hard_rule_broken_and_deterministic(self, cluster, template, memory, disk,
                                                   capacity, soft):
        req = requests_for(template, memory, disk)
        options = Options(capacity_checks=capacity, ignore_soft_errors=soft)
        answer = solve.answer(wire.AllocatorInput(cluster, req), options)
        again = solve.answer(wire.AllocatorInput(cluster, req), options)
        self.assertEqual(wire.render_answer(answer), wire.render_answer(again))
        if answer.success:
            self.assertEqual(broken_rules(cluster, req, list(answer.result)), [],
                             answer.info)
            # the answer passes Ganeti's own result check
            req.check_result(list(answer.result), cluster)
        else:
            self.assertTrue(answer.info.startswith("Request failed: "))

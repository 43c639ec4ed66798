"""Copy-on-write drafts, incremental verify and the text kept by parts."""

import copy
import json
import random
import uuid as uuidmod

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import config as configmod
from ganeti.core import config_instances, configdraft, configtext, configverify
from ganeti.core.objects import Node
from tests.fakes.configs import grow, small_config


def grown(nodes=6):
    """A small config with a few more nodes (the first few master candidates)."""
    cfg = small_config()
    group = next(iter(cfg.nodegroups.values()))
    template = cfg.master
    for i in range(nodes):
        u = str(uuidmod.UUID(int=1000 + i, version=4))
        node = template.clone()
        node.uuid, node.name, node.primary_ip = u, f"n{i}.test", f"127.0.9.{i + 1}"
        node.master_candidate = i < 2
        cfg.nodes[u] = node
        group.members.append(u)
    assert configmod.verify(cfg) == []
    return cfg


class DraftTest(SynchronousTestCase):
    def test_untouched_parts_are_shared_and_touched_ones_copied(self):
        base = grown()
        draft = configdraft.Draft(base)
        some = next(u for u in base.nodes if u != base.cluster.master_node)
        draft.nodes[some].offline = True
        draft.nodes[some].master_candidate = False
        new, delta = configdraft.finish(draft)
        self.assertFalse(base.nodes[some].offline)  # the committed config is untouched
        self.assertTrue(new.nodes[some].offline)
        self.assertIs(new.cluster, base.cluster)
        self.assertIs(new.nodegroups, base.nodegroups)
        for u, node in base.nodes.items():
            if u != some:
                self.assertIs(new.nodes[u], node)
        self.assertEqual(list(delta.changed), ["nodes"])
        self.assertEqual(list(delta.changed["nodes"]), [some])
        self.assertFalse(delta.cluster)

    def test_objects_read_but_not_changed_are_not_in_the_delta(self):
        base = grown()
        draft = configdraft.Draft(base)
        names = [n.name for n in draft.nodes.values()]  # copies every node
        self.assertEqual(len(names), len(base.nodes))
        _ = draft.cluster.cluster_name
        new, delta = configdraft.finish(draft)
        self.assertFalse(delta)
        self.assertIs(new.nodes, base.nodes)
        self.assertIs(new.cluster, base.cluster)

    def test_add_delete_and_replace(self):
        base = grown()
        draft = configdraft.Draft(base)
        victim = next(u for u, n in base.nodes.items() if not n.master_candidate)
        group = draft.nodegroups[base.nodes[victim].group]
        group.members.remove(victim)
        del draft.nodes[victim]
        added = base.master.clone()
        added.uuid, added.name, added.master_candidate = "new-uuid", "new.test", False
        draft.nodes["new-uuid"] = added
        group.members.append("new-uuid")
        new, delta = configdraft.finish(draft)
        self.assertNotIn(victim, new.nodes)
        self.assertIn(victim, base.nodes)
        self.assertEqual(delta.deleted["nodes"], [victim])
        self.assertEqual(set(delta.changed["nodes"]), {"new-uuid"})
        self.assertEqual(list(new.nodes)[-1], "new-uuid")  # added at the end, as dicts do
        self.assertIs(new.node_by_name("new.test"), added)
        self.assertIsNone(new.node_by_name(base.nodes[victim].name))
        self.assertIsNotNone(base.node_by_name(base.nodes[victim].name))

    def test_name_lookups_in_a_draft_see_renames(self):
        base = grown()
        draft = configdraft.Draft(base)
        node = draft.node_by_name("n3.test")
        node.name = "renamed.test"
        self.assertIs(draft.node_by_name("renamed.test"), node)
        self.assertIsNone(draft.node_by_name("n3.test"))
        new, _ = configdraft.finish(draft)
        self.assertEqual(new.node_by_name("renamed.test").uuid, node.uuid)
        self.assertIsNone(new.node_by_name("n3.test"))
        self.assertEqual(base.node_by_name("n3.test").uuid, node.uuid)

    def test_clone_is_deep_and_equal(self):
        cfg = small_config()
        cluster = cfg.cluster.clone()
        self.assertEqual(cluster, cfg.cluster)
        cluster.hvparams.setdefault("fake", {})["x"] = 1
        cluster.tags.append("t")
        self.assertNotEqual(cluster, cfg.cluster)
        self.assertNotIn("t", cfg.cluster.tags)


def random_change(rng, cfg):
    """A random change function, and whether it is meant to be valid."""
    nodes = list(cfg.nodes)
    others = [u for u in nodes if u != cfg.cluster.master_node]
    kind = rng.choice(["tag", "flag", "rename", "clash", "dangling", "ip", "add", "remove",
                       "group-tag", "bad-master"])
    u = rng.choice(others)

    def change(c):
        if kind == "tag":
            c.cluster.tags.append(f"t{rng.random()}")
        elif kind == "flag":
            n = c.nodes[u]
            n.master_candidate, n.offline = False, not n.offline
        elif kind == "rename":
            c.nodes[u].name = f"r{rng.randrange(10 ** 9)}.test"
        elif kind == "clash":
            c.nodes[u].name = c.nodes[rng.choice([x for x in nodes if x != u])].name
        elif kind == "dangling":
            c.nodes[u].group = "no-such-group"
        elif kind == "ip":
            c.nodes[u].primary_ip = "not-an-ip"
        elif kind == "add":
            n = Node(uuid=f"a{rng.randrange(10 ** 9)}", name=f"a{rng.randrange(10 ** 9)}.t",
                     primary_ip="127.0.8.1", group=c.nodes[u].group)
            c.nodes[n.uuid] = n
            if rng.random() < 0.8:
                c.nodegroups[n.group].members.append(n.uuid)
        elif kind == "remove":
            group = c.nodes[u].group
            del c.nodes[u]
            if rng.random() < 0.8:
                c.nodegroups[group].members.remove(u)
        elif kind == "group-tag":
            next(iter(c.nodegroups.values())).tags.append("g")
        elif kind == "bad-master":
            c.nodes[c.cluster.master_node].master_candidate = False
    return change


class IncrementalVerifyTest(SynchronousTestCase):
    def test_verify_delta_agrees_with_full_verify(self):
        rng = random.Random(15)
        cfg = grown(8)
        agreed = {True: 0, False: 0}
        for _ in range(400):
            if len(cfg.nodes) < 4:
                cfg = grown(8)
            draft = configdraft.Draft(cfg)
            try:
                random_change(rng, cfg)(draft)
            except (ValueError, KeyError):
                continue
            new, delta = configdraft.finish(draft)
            incremental = configverify.verify_delta(cfg, new, delta)
            full = configmod.verify(new)
            self.assertEqual(bool(incremental), bool(full), (incremental, full))
            agreed[bool(full)] += 1
            if not full:
                cfg = new
        self.assertGreater(agreed[True], 50)
        self.assertGreater(agreed[False], 50)


def with_instances(count=16):
    """A small config with a few nodes and ``count`` instances (plain, drbd, file and
    diskless disks, one NIC each)."""
    d = json.loads(configmod.dump(grown(4)))
    cfg = configmod.parse(grow(d, count, 0))
    assert configmod.verify(cfg) == []
    return cfg


def random_instance_change(rng, cfg):
    """A random change of instances or their disks; many make clashes with objects
    the change does not touch."""
    insts = list(cfg.instances)
    a, b = rng.sample(insts, 2)
    drbd = [k for k, disk in cfg.disks.items() if disk.dev_type == "drbd"]
    kind = rng.choice(["mac-clash", "mac-new", "mac-swap", "port-clash", "port-new",
                       "drbd-port-clash", "minor-clash", "ip-new", "ip-clash", "remove",
                       "rename", "tag", "pool-clash"])
    fresh = rng.randrange(1 << 24)

    def change(c):
        ia, ib = c.instances[a], c.instances[b]
        if kind == "mac-clash":
            ia.nics[0].mac = ib.nics[0].mac
        elif kind == "mac-new":
            ia.nics[0].mac = "aa:01:" + ":".join(f"{(fresh >> s) & 255:02x}"
                                                 for s in (24, 16, 8, 0))
        elif kind == "mac-swap":
            ia.nics[0].mac, ib.nics[0].mac = ib.nics[0].mac, ia.nics[0].mac
        elif kind == "port-clash":
            ia.network_port = ib.network_port
        elif kind == "port-new":
            c.cluster.highest_used_port += 1
            ia.network_port = c.cluster.highest_used_port
        elif kind == "drbd-port-clash" and drbd:
            disk = c.disks[rng.choice(drbd)]
            lid = list(disk.logical_id)
            lid[2] = ib.network_port
            disk.logical_id = lid
        elif kind == "minor-clash" and len(drbd) > 1:
            one, two = rng.sample(drbd, 2)
            lid = list(c.disks[one].logical_id)
            other = c.disks[two].logical_id
            lid[0], lid[3] = other[0], other[3]
            if lid[0] == lid[1]:
                lid[1] = other[1]
            c.disks[one].logical_id = lid
            c.disks[one].nodes = [lid[0], lid[1]]
        elif kind == "ip-new":
            ia.nics[0].ip = f"10.{fresh >> 16 & 255}.{fresh >> 8 & 255}.{fresh & 255}"
        elif kind == "ip-clash":
            ia.nics[0].ip = ib.nics[0].ip or "10.9.9.9"
        elif kind == "remove":
            for disk in ia.disks:
                del c.disks[disk]
            del c.instances[a]
        elif kind == "rename":
            ia.name = f"renamed{fresh}.test"
        elif kind == "tag":
            c.cluster.tags.append("t")
        elif kind == "pool-clash":
            c.cluster.tcpudp_port_pool.append(ib.network_port)
    return change


class UniqueValuesTest(SynchronousTestCase):
    """Values that must be unique across instances: the incremental check, given the
    index of the whole config, agrees with the full verify."""

    def test_verify_delta_with_the_index_agrees_with_full_verify(self):
        rng = random.Random(16)
        cfg = with_instances()
        unique = config_instances.UniqueIndex.of(cfg)
        agreed = {True: 0, False: 0}
        for _ in range(600):
            if len(cfg.instances) < 6:
                cfg = with_instances()
                unique = config_instances.UniqueIndex.of(cfg)
            draft = configdraft.Draft(cfg)
            random_instance_change(rng, cfg)(draft)
            new, delta = configdraft.finish(draft)
            incremental = configverify.verify_delta(cfg, new, delta, unique)
            full = configmod.verify(new)
            self.assertEqual(bool(incremental), bool(full), (incremental, full))
            agreed[bool(full)] += 1
            if not full:
                cfg = new
                # the index followed the change: it is the index of the new config
                self.assertEqual(unique._tables, config_instances.UniqueIndex.of(cfg)._tables)
        self.assertGreater(agreed[True], 100)
        self.assertGreater(agreed[False], 100)

    def test_without_the_index_a_clash_with_an_untouched_instance_is_missed(self):
        # why the writer keeps the index: the touched objects alone do not show it
        cfg = with_instances()
        a, b = list(cfg.instances)[:2]
        draft = configdraft.Draft(cfg)
        draft.instances[a].nics[0].mac = cfg.instances[b].nics[0].mac
        new, delta = configdraft.finish(draft)
        self.assertEqual(configverify.verify_delta(cfg, new, delta), [])
        problems = configverify.verify_delta(cfg, new, delta,
                                             config_instances.UniqueIndex.of(cfg))
        mac = cfg.instances[b].nics[0].mac
        self.assertEqual(problems, [
            f"mac {mac}: used by more than one NIC: {cfg.instances[b].name}/nic 0, "
            f"{cfg.instances[a].name}/nic 0"])
        self.assertEqual(configmod.verify(new), [
            f"mac {mac}: used by more than one NIC: {cfg.instances[a].name}/nic 0, "
            f"{cfg.instances[b].name}/nic 0"])

    def test_rollback_undoes_accepted_changes(self):
        cfg = with_instances()
        unique = config_instances.UniqueIndex.of(cfg)
        before = copy.deepcopy(unique._tables)
        mark = unique.mark()
        draft = configdraft.Draft(cfg)
        first = next(iter(cfg.instances))
        draft.instances[first].nics[0].mac = "aa:02:00:00:00:01"
        del draft.instances[list(cfg.instances)[1]]
        new, delta = configdraft.finish(draft)
        for disk in cfg.instances[list(cfg.instances)[1]].disks:
            del new.disks[disk]
            delta.deleted.setdefault("disks", []).append(disk)
        self.assertEqual(configverify.verify_delta(cfg, new, delta, unique), [])
        self.assertNotEqual(unique._tables, before)
        unique.rollback(mark)
        self.assertEqual(unique._tables, before)


class TextTest(SynchronousTestCase):
    def test_parts_render_exactly_what_dump_gives_over_random_changes(self):
        rng = random.Random(7)
        cfg = grown(8)
        state = configtext.TextState.from_config(cfg)
        self.assertEqual(state.render(), configmod.dump(cfg))
        for _ in range(150):
            if len(cfg.nodes) < 4:
                break
            draft = configdraft.Draft(cfg)
            random_change(rng, cfg)(draft)
            new, delta = configdraft.finish(draft)
            if configmod.verify(new):
                continue
            new.serial_no += 1
            state = state.derive(new, delta)
            cfg = new
            self.assertEqual(state.render(), configmod.dump(cfg))

    def test_split_keeps_the_text_as_read(self):
        cfg = grown()
        text = configmod.dump(cfg)
        top, cluster, parts = configtext.split(text)
        self.assertEqual(configmod.parse(top), cfg)
        state = configtext.state_from_split(configmod.parse(top), cluster, parts)
        self.assertEqual(state.render(), text)
        self.assertIs(state.containers["nodes"].render(), parts["nodes"].text)

    def test_foreign_text_is_serialised_again(self):
        cfg = grown()
        pretty = configmod.serializer.dump_json(cfg.to_dict(), pretty=True)
        top, cluster, parts = configtext.split(pretty)
        state = configtext.state_from_split(configmod.parse(top), cluster, parts)
        self.assertEqual(state.render(), configmod.dump(cfg))

    def test_split_refuses_what_json_refuses(self):
        for bad in ["", "[]", '{"a":1', '{"a":1}x', '{"nodes":{"x":}}', '{"a" 1}']:
            with self.assertRaises(ValueError):
                configtext.split(bad)

    def test_record_applies_to_a_copy_of_the_parts(self):
        cfg = grown()
        state = configtext.TextState.from_config(cfg)
        node_copy = copy.deepcopy(state)
        draft = configdraft.Draft(cfg)
        draft.cluster.tags.append("x")
        u = next(u for u in cfg.nodes if u != cfg.cluster.master_node)
        draft.nodes[u].drained = True
        draft.nodes[u].master_candidate = False
        new, delta = configdraft.finish(draft)
        new.serial_no += 1
        new_state = state.derive(new, delta)
        rec = configtext.parse_record(new_state.record(cfg.serial_no, delta, True))
        self.assertEqual(node_copy.apply_record(rec).render(), configmod.dump(new))

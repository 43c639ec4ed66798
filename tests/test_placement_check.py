"""The independent placement validator (tests/placement_check.py) catches every violation.

Each case takes a valid answer on a small generated cluster, breaks one rule by hand and
expects the validator to name it; the valid answers themselves pass (so the checks can
fail both ways).  The text form for htools is checked against hail's own score in
test_placement_htools.py.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from bench import placement_gen
from tests import placement_check
from tests.placement_check import check


def _cluster(groups: int = 1) -> dict[str, Any]:
    return placement_gen.make_cluster(6, groups=groups, seed=7, per_node=4)


def _nodes(data: dict[str, Any], group: int = 0) -> list[str]:
    gid = sorted(data["nodegroups"], key=lambda g: data["nodegroups"][g]["name"])[group]
    return sorted(n for n, v in data["nodes"].items() if v["group"] == gid)


def _ok(result: Any) -> str:
    return json.dumps({"success": True, "info": "Request successful", "result": result})


def _alloc(template: str = "drbd", **over: Any) -> dict[str, Any]:
    data = _cluster()
    req = placement_gen.alloc_request("new.example.com", template, 1024, 1, [2048])
    data["request"] = {**req, "type": "allocate", **over}
    return data


def _errors(data: dict[str, Any], answer: Any) -> str:
    report = check(data, answer if isinstance(answer, str) else _ok(answer))
    assert not report.valid, "the validator accepted a broken answer"
    return "\n".join(report.errors)


def test_valid_allocation_passes_and_is_applied() -> None:
    data = _alloc()
    a, b = _nodes(data)[:2]
    report = check(data, _ok([a, b]))
    assert report.valid, report.errors
    assert (report.placed, report.requested) == (1, 1)
    after = report.after
    assert after["instances"]["new.example.com"]["nodes"] == [a, b]
    assert after["nodes"][a]["free_memory"] == data["nodes"][a]["free_memory"] - 1024
    assert after["nodes"][b]["free_memory"] == data["nodes"][b]["free_memory"]
    for node in (a, b):
        assert after["nodes"][node]["free_disk"] == \
            data["nodes"][node]["free_disk"] - (2048 + 128)
    assert "request" not in after


@pytest.mark.parametrize("flag,value,word", [
    ("offline", True, "offline"), ("drained", True, "drained"),
    ("vm_capable", False, "not vm_capable")])
def test_unusable_node(flag: str, value: bool, word: str) -> None:
    data = _alloc()
    a, b = _nodes(data)[:2]
    data["nodes"][b][flag] = value
    assert word in _errors(data, [a, b])


def test_unknown_node_wrong_count_same_node() -> None:
    data = _alloc()
    a = _nodes(data)[0]
    assert "unknown node 'nodeX'" in _errors(data, [a, "nodeX"])
    assert "1 nodes given, 2 required" in _errors(data, [a])
    assert "the same node twice" in _errors(data, [a, a])
    assert "not a list" in _errors(data, _ok(a))


def test_mirrored_nodes_in_two_groups() -> None:
    data = _cluster(groups=2)
    data["request"] = {**placement_gen.alloc_request("n.example.com", "drbd", 1024, 1,
                                                     [2048]), "type": "allocate"}
    assert "different groups" in _errors(data, [_nodes(data, 0)[0], _nodes(data, 1)[0]])


def test_memory_and_disk_must_fit() -> None:
    data = _alloc()
    a, b = _nodes(data)[:2]
    data["nodes"][a]["free_memory"] = 1000
    assert f"not enough memory on {a}" in _errors(data, [a, b])
    data = _alloc()
    data["nodes"][b]["free_disk"] = 2000
    assert f"not enough disk on {b}" in _errors(data, [a, b])


def test_instance_policy() -> None:
    a, b = _nodes(_cluster())[:2]
    assert "min/max spec" in _errors(_alloc(memory=65536), [a, b])
    assert "min/max spec" in _errors(_alloc(vcpus=9), [a, b])
    small = _alloc(disks=[{"size": 512, "mode": "rw"}], disk_space_total=640)
    assert "min/max spec" in _errors(small, [a, b])
    data = _alloc()
    for group in data["nodegroups"].values():
        group["ipolicy"]["disk-templates"] = ["plain"]
    assert "disk template drbd not allowed" in _errors(data, [a, b])


def test_answer_shape() -> None:
    data = _alloc()
    assert "not JSON" in _errors(data, "{oops")
    assert "success/info/result" in _errors(data, json.dumps({"success": True}))
    assert "success/info/result" in _errors(data, json.dumps([1, 2]))


def test_failed_answer_is_valid_and_places_nothing() -> None:
    report = check(_alloc(), json.dumps({"success": False, "info": "no", "result": []}))
    assert report.valid and report.placed == 0 and report.requested == 1


def _relocate() -> dict[str, Any]:
    data = _cluster()
    name = next(n for n, i in sorted(data["instances"].items())
                if i["disk_template"] == "drbd")
    data["request"] = placement_gen.make_request(data, "relocate")
    inst = data["instances"][name]
    data["request"].update(name=name, relocate_from=[inst["nodes"][1]],
                           disk_space_total=inst["disk_space_total"])
    return data


def test_relocate() -> None:
    data = _relocate()
    inst = data["instances"][data["request"]["name"]]
    free = next(n for n in _nodes(data) if n not in inst["nodes"])
    report = check(data, _ok([free]))
    assert report.valid, report.errors
    assert report.after["instances"][data["request"]["name"]]["nodes"] == \
        [inst["nodes"][0], free]
    assert "one of the instance's nodes" in _errors(data, [inst["nodes"][0]])
    assert "one of the instance's nodes" in _errors(data, [inst["nodes"][1]])


def _multi(count: int = 3) -> dict[str, Any]:
    data = _cluster()
    data["request"] = {"type": "multi-allocate", "instances": [
        placement_gen.alloc_request(f"m{i}.example.com", "plain", 512, 1, [1024])
        for i in range(count)]}
    return data


def test_multi_allocate() -> None:
    data = _multi()
    a, b = _nodes(data)[:2]
    good = [[["m0.example.com", [a]], ["m1.example.com", [b]]], ["m2.example.com"]]
    report = check(data, _ok(good))
    assert report.valid, report.errors
    assert (report.placed, report.requested) == (2, 3)
    twice = [[["m0.example.com", [a]], ["m1.example.com", [b]]],
             ["m2.example.com", "m0.example.com"]]
    assert "m0.example.com named twice" in _errors(data, twice)
    assert "m2.example.com neither" in _errors(data, [[["m0.example.com", [a]]],
                                                      ["m1.example.com"]])
    assert "unknown failed instance" in _errors(data, [[], ["m0.example.com", "m1.example.com",
                                                            "m2.example.com", "zz"]])
    assert "not [allocated, failed]" in _errors(data, [a, b])
    data["nodes"][a]["free_memory"] = 700    # the first fits, the second no more
    both = [[["m0.example.com", [a]], ["m1.example.com", [a]]], ["m2.example.com"]]
    assert f"allocate m1.example.com: not enough memory on {a}" in _errors(data, both)


def _evacuate(mode: str) -> tuple[dict[str, Any], str]:
    data = _cluster()
    kind = {"primary-only": "evacuate-primary", "secondary-only": "evacuate-secondary",
            "all": "evacuate-all"}[mode]
    data["request"] = placement_gen.make_request(data, kind)
    node = placement_gen._busiest(data)
    return data, node


def _secondary_moves(data: dict[str, Any], node: str,
                     pick: Any) -> tuple[list[Any], list[Any]]:
    moved, jobs = [], []
    for name in data["request"]["instances"]:
        inst = data["instances"][name]
        new = pick(inst)
        moved.append([name, "default", [inst["nodes"][0], new]])
        jobs.append([{"OP_ID": "OP_INSTANCE_REPLACE_DISKS", "instance_name": name,
                      "mode": "replace_new_secondary", "remote_node": new, "disks": [],
                      "early_release": False, "ignore_ipolicy": False}])
    return moved, jobs


def test_node_evacuate_secondary() -> None:
    data, node = _evacuate("secondary-only")
    nodes = _nodes(data)

    def other(inst: dict[str, Any]) -> str:
        return next(n for n in nodes if n not in inst["nodes"])
    moved, jobs = _secondary_moves(data, node, other)
    report = check(data, _ok([moved, [], jobs]))
    assert report.valid, report.errors
    assert report.placed == report.requested == len(moved)
    # a new secondary that is drained
    data["nodes"][moved[0][2][1]]["drained"] = True
    assert f"node {moved[0][2][1]} is drained" in _errors(data, [moved, [], jobs])
    data["nodes"][moved[0][2][1]]["drained"] = False
    # back onto the evacuated node: the node is still used
    back_moved, back_jobs = _secondary_moves(data, node, lambda inst: node)
    assert f"the evacuated node {node} is still used" in \
        _errors(data, [back_moved, [], back_jobs])
    # the opcodes lead elsewhere than the answer says
    wrong = copy.deepcopy(jobs)
    wrong[0][0]["remote_node"] = next(n for n in nodes if n not in (
        moved[0][2][1], *data["instances"][moved[0][0]]["nodes"]))
    assert "the opcodes lead to" in _errors(data, [moved, [], wrong])
    bad_op = copy.deepcopy(jobs)
    bad_op[0][0]["OP_ID"] = "OP_INSTANCE_REMOVE"
    assert "unknown opcode" in _errors(data, [moved, [], bad_op])
    assert "neither moved nor failed" in _errors(data, [moved[1:], [], jobs[1:]])
    failed = [[moved[0][0], "no"]]
    assert f"an opcode for '{moved[0][0]}', not moved" in _errors(
        data, [moved[1:], failed, jobs])
    assert "not [moved, failed, jobs]" in _errors(data, [moved, []])
    assert "bad move entry" in _errors(data, [[["nosuch", "default", []]], [], []])


def test_node_evacuate_primary_failover() -> None:
    data, node = _evacuate("primary-only")
    drbd = [n for n in data["request"]["instances"]
            if data["instances"][n]["disk_template"] == "drbd"]
    assert drbd
    name = drbd[0]
    pri, sec = data["instances"][name]["nodes"]
    failover = [{"OP_ID": "OP_INSTANCE_MIGRATE", "instance_name": name,
                 "allow_failover": True}]
    failed = [[n, "not moved"] for n in data["request"]["instances"] if n != name]
    report = check(data, _ok([[[name, "default", [sec, pri]]], failed, [failover]]))
    assert report.valid, report.errors
    assert report.after["instances"][name]["nodes"] == [sec, pri]
    # both nodes drained (the evacuated one, as usual, and the secondary): a drbd
    # failover has no other target, and Ganeti (hail) does it
    for node_name in (pri, sec):
        data["nodes"][node_name]["drained"] = True
    assert check(data, _ok([[[name, "default", [sec, pri]]], failed, [failover]])).valid
    data["nodes"][pri]["drained"] = data["nodes"][sec]["drained"] = False
    stay = [{"OP_ID": "OP_INSTANCE_REPLACE_DISKS", "instance_name": name,
             "mode": "replace_new_secondary",
             "remote_node": next(n for n in _nodes(data) if n not in (pri, sec))}]
    new_sec = stay[0]["remote_node"]
    assert f"the evacuated node {node} is still used" in _errors(
        data, [[[name, "default", [pri, new_sec]]], failed, [stay]])


def test_change_group() -> None:
    data = placement_gen.make_input(6, "change-group", seed=7)
    name = data["request"]["instances"][0]
    inst = data["instances"][name]
    same = inst["nodes"][::-1] if len(inst["nodes"]) == 2 else \
        [next(n for n in _nodes(data, 0) if n not in inst["nodes"])]
    others = [[n, "x"] for n in data["request"]["instances"][1:]]
    moved = [[name, "default", same]]
    jobs = [[{"OP_ID": "OP_INSTANCE_MIGRATE", "instance_name": name,
              **({} if len(same) == 2 else {"target_node": same[0]})}]]
    assert "still in its group" in _errors(data, [moved, others, jobs])
    target = _nodes(data, 1)[:len(inst["nodes"])]
    moved = [[name, "group2", target]]
    report = check(data, _ok([moved, others, []]))
    assert not report.valid    # no opcodes lead there
    assert any("the opcodes lead to" in e for e in report.errors)


def test_unknown_request_type() -> None:
    data = _alloc()
    data["request"]["type"] = "bogus"
    assert "unknown request type" in _errors(data, [])


def test_handlers_cover_every_request_type_of_the_generator() -> None:
    kinds = {placement_gen.make_request(_cluster(), k)["type"]
             for k in placement_gen.REQUESTS if k != "change-group"}
    assert kinds | {"change-group"} == set(placement_check.HANDLERS)


def test_soft_rules_reported_apart() -> None:
    """A node newly failing N+1 or above the vCPU ratio is a soft violation: listed in
    ``soft``, the answer still valid."""
    data = _alloc(template="plain", memory=2048)
    a = _nodes(data)[0]
    need: dict[str, int] = {}
    for inst in data["instances"].values():
        if inst["disk_template"] == "drbd" and inst["nodes"][1] == a:
            need[inst["nodes"][0]] = need.get(inst["nodes"][0], 0) + inst["memory"]
    assert need, "the node holds no drbd secondary"
    data["nodes"][a]["free_memory"] = max(need.values()) + 1024   # happy, 2048 tips it
    report = check(data, _ok([a]))
    assert report.valid, report.errors
    assert report.soft == [f"node {a} newly N+1 failing"]
    data = _alloc(template="plain", memory=128, vcpus=4)
    used = data["nodes"][a]["reserved_cpus"] + sum(
        i["vcpus"] for i in data["instances"].values() if i["nodes"][0] == a)
    data["nodes"][a]["total_cpus"] = -(-used // 4)      # at most the ratio of 4 now
    assert check(data, _ok([a])).soft == [f"node {a} newly above the vCPU ratio"]


def test_the_validator_and_scorer_share_no_code_with_ganeti() -> None:
    """Independence: neither module imports anything from the ganeti package."""
    import ast
    from pathlib import Path
    here = Path(__file__).parent
    for name in ("placement_check.py", "placement_htools.py"):
        tree = ast.parse((here / name).read_text())
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                    for alias in node.names}
        imported |= {node.module or "" for node in ast.walk(tree)
                     if isinstance(node, ast.ImportFrom)}
        assert imported, name
        assert not [m for m in imported if m.split(".")[0] == "ganeti"], (name, imported)

"""htools as the benchmark's independent scorer (tests/placement_htools.py), and the
generated inputs as htools reads them.

- the text form of a generated cluster (usual, tight, two groups) loads without htools'
  "inconsistent data" warnings and is N+1 happy (the generator's promise);
- the cluster after hail's own answer, scored by ``hinfo -t``, has exactly the score hail
  reports for its choice: the text conversion and the validator's after-state are what
  hail computes on;
- ``hinfo -I`` counts every instance twice in htools 3.0.2 (why the text form is used).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from bench import placement_gen
from tests import placement_htools
from tests.placement_check import check

HAIL = "/usr/lib/ganeti/iallocators/hail"
pytestmark = pytest.mark.subprocess


@pytest.mark.parametrize("kind", ["allocate-drbd", "allocate-drbd-tight", "change-group"])
def test_generated_cluster_is_consistent_and_n1_happy(kind: str) -> None:
    data = placement_gen.make_input(10, kind)
    assert placement_htools.warnings(data) == []
    assert placement_htools.n1_happy(data)
    counts = re.search(r"Loaded (\d+) nodes, (\d+) instances",
                       placement_htools.hinfo(data))
    assert counts is not None
    assert (int(counts.group(1)), int(counts.group(2))) == (10, len(data["instances"]))


@pytest.mark.parametrize("kind", ["allocate-drbd", "allocate-plain", "allocate-drbd-big",
                                  "allocate-drbd-tight"])
def test_after_state_scores_as_hail_reports(kind: str, tmp_path: Path) -> None:
    data = placement_gen.make_input(10, kind)
    path = tmp_path / "in.json"
    path.write_text(json.dumps(data))
    out = subprocess.run([HAIL, str(path)], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    report = check(data, out)
    assert report.valid and report.placed == 1, report.errors
    reported = re.search(r"score: ([0-9.]+)", report.info)
    assert reported is not None
    assert f"{placement_htools.score(report.after):.8f}" == reported.group(1)


def test_hinfo_ialloc_source_counts_instances_twice(tmp_path: Path) -> None:
    data = placement_gen.make_input(10, "allocate-plain")
    path = tmp_path / "in.json"
    path.write_text(json.dumps(data))
    proc = subprocess.run(["hinfo", "-I", str(path), "-p"], capture_output=True,
                          text=True, timeout=120, check=True)
    lines = (proc.stdout + proc.stderr).splitlines()
    header = next(line.split() for line in lines if "pcnt" in line)
    column = header.index("pcnt") - len(header)    # from the end: F may be blank
    pcnt = [int(line.split()[column]) for line in lines
            if line.strip().startswith("node")]
    primaries = {n: 0 for n in data["nodes"]}
    for inst in data["instances"].values():
        primaries[inst["nodes"][0]] += 1
    assert pcnt == [2 * primaries[n] for n in sorted(primaries)]


def test_n1_rules_out_targets_of_the_big_and_tight_requests(tmp_path: Path) -> None:
    """The generator's promise that N+1 matters: hail finds memory failures among the
    candidate pairs of the big and the tight drbd allocations, none for the usual one."""
    fails = {}
    for kind in ("allocate-drbd", "allocate-drbd-big", "allocate-drbd-tight"):
        path = tmp_path / f"{kind}.json"
        path.write_text(json.dumps(placement_gen.make_input(10, kind)))
        info = json.loads(subprocess.run([HAIL, str(path)], capture_output=True, text=True,
                                         timeout=120, check=True).stdout)["info"]
        found = re.search(r"failures (\d+)", info)
        assert found is not None, info
        fails[kind] = int(found.group(1))
    assert fails["allocate-drbd"] == 0
    assert fails["allocate-drbd-big"] > 0 and fails["allocate-drbd-tight"] > 0

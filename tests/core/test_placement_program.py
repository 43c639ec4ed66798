"""bin/ganeti-place end to end: the program Ganeti (and any harness) runs as an iallocator.

Also compares it with Debian's hail run now on the same files, when hail is installed.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
import unittest
from pathlib import Path

import pytest
from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import place

ROOT = Path(__file__).resolve().parent.parent.parent
DATA = ROOT / "tests" / "data" / "iallocator"
PROGRAM = ROOT / "bin" / "ganeti-place"
HAIL = Path("/usr/lib/ganeti/iallocators/hail")


def program(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(PROGRAM), *args], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)


def score_of(info: str) -> float:
    return float(re.search(r"score: ([\d.]+)", info).group(1))


@pytest.mark.subprocess
class ProgramTest(SynchronousTestCase):
    def setUp(self):
        self.tmp = Path(self.mktemp()).resolve()
        self.tmp.mkdir()

    def write(self, name: str, content: str | bytes) -> str:
        path = self.tmp / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        return str(path)

    def unzip(self, name: str) -> str:
        return self.write(name.replace(".gz", ""), gzip.decompress((DATA / name).read_bytes()))

    def test_answers_like_hail(self):
        done = program(str(DATA / "allocate.in.json"))
        self.assertEqual(done.returncode, 0, done.stderr)
        answer = json.loads(done.stdout)
        hail = json.loads((DATA / "allocate.hail.json").read_text())
        self.assertEqual(answer, hail)

    def test_as_a_module(self):
        done = subprocess.run([sys.executable, "-m", "ganeti.cli.place",
                               str(DATA / "allocate.in.json")], capture_output=True, text=True,
                              timeout=120, cwd=ROOT)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual(json.loads(done.stdout),
                         json.loads((DATA / "allocate.hail.json").read_text()))

    def test_options(self):
        path = str(DATA / "allocate.in.json")
        done = program("--no-capacity-checks", "--ignore-soft-errors", path)
        answer = json.loads(done.stdout)
        self.assertTrue(answer["success"])
        self.assertNotIn("FailN1", answer["info"])  # no capacity check: g2 has a solution

    def test_bad_input_one_line_exit_1(self):
        cases = {
            "missing": str(self.tmp / "absent.json"),
            "not json": self.write("garbage.json", "{not json"),
            "wrong shape": self.write("shape.json", json.dumps({"version": 2})),
            "wrong version": self.write("v1.json", json.dumps({"version": 1})),
            "disks not objects": self.write("disks.json", json.dumps(
                {**json.loads((DATA / "allocate.in.json").read_text()),
                 "instances": {"i": {"disk_template": "plain", "disks": [1], "nodes": ["x"],
                                     "memory": 1, "vcpus": 1}}})),
            "bad node": self.write("node.json", json.dumps(
                {**json.loads((DATA / "allocate.in.json").read_text()),
                 "nodes": {"n": {"group": 1}}})),
        }
        for what, path in cases.items():
            done = program(path)
            self.assertEqual(done.returncode, 1, what)
            self.assertEqual(done.stdout, "", what)
            self.assertEqual(len(done.stderr.strip().splitlines()), 1, (what, done.stderr))
            self.assertNotIn("Traceback", done.stderr, what)
        self.assertEqual(program().returncode, 1)
        self.assertEqual(program("a", "b").returncode, 1)

    def test_unknown_request_type_is_a_failed_answer(self):
        data = json.loads((DATA / "allocate.in.json").read_text())
        data["request"] = {"type": "teleport"}
        done = program(self.write("teleport.json", json.dumps(data)))
        self.assertEqual(done.returncode, 0, done.stderr)
        answer = json.loads(done.stdout)
        self.assertFalse(answer["success"])
        self.assertIn("teleport", answer["info"])

    def test_in_process_main(self):
        out = self.tmp / "out"
        path = str(DATA / "multi-allocate.in.json")
        with open(out, "w") as stdout:
            saved, sys.stdout = sys.stdout, stdout
            try:
                self.assertEqual(place.main([path]), 0)
            finally:
                sys.stdout = saved
        self.assertEqual(json.loads(out.read_text()),
                         json.loads((DATA / "multi-allocate.hail.json").read_text()))

    def test_against_hail_now(self):
        if not HAIL.exists():
            raise unittest.SkipTest("Debian's hail is not installed (ganeti-htools-3.0)")
        for name in ("gen10-allocate-drbd.in.json.gz", "gen10-allocate-plain.in.json.gz",
                     "gen10-relocate.in.json.gz"):
            path = self.unzip(name)
            hail = json.loads(subprocess.run([str(HAIL), path], capture_output=True,
                                             text=True, timeout=300).stdout)
            ours = json.loads(program(path).stdout)
            self.assertTrue(ours["success"], ours["info"])
            if "score:" in hail["info"]:
                self.assertLessEqual(score_of(ours["info"]), score_of(hail["info"]) + 1e-8)
            else:
                self.assertEqual(ours["result"], hail["result"])

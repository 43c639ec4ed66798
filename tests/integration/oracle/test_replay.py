"""The oracle's transcript (replay.py) without clusters: what a replay checks."""

from __future__ import annotations

import os
import tempfile
from unittest import mock

from twisted.trial.unittest import SynchronousTestCase

from tests.integration.oracle import replay


class FakeReal:
    """A live side's alignment calls, answering from a script."""

    name = "real"

    def __init__(self) -> None:
        self.maxjob = 7

    def query_max_job(self) -> int:
        return self.maxjob

    def pad_jobs(self, target: int) -> int:
        added, self.maxjob = target - self.maxjob, target
        return added

    def archive(self, first: int, last: int) -> None:
        pass

    def archive_all(self) -> None:
        pass


def record_some() -> dict:
    rec = replay.Recorder(FakeReal(), "k1")
    rec.query_max_job()
    rec.pad_jobs(9)
    rec.archive(8, 9)
    rec.case_done("c1", [{"rc": 0, "stdout": "x\n", "stderr": ""}])
    rec.archive_all()
    return rec.data


class ReplayTest(SynchronousTestCase):
    def test_the_same_exchanges_replay_the_recorded_answers(self):
        side = replay.ReplaySide(record_some())
        self.assertEqual(side.query_max_job(), 7)
        self.assertEqual(side.pad_jobs(9), 2)
        side.archive(8, 9)
        self.assertEqual(side.recorded_results("c1"),
                         [{"rc": 0, "stdout": "x\n", "stderr": ""}])
        side.archive_all()
        side.finished()

    def test_another_exchange_diverges(self):
        side = replay.ReplaySide(record_some())
        side.query_max_job()
        with self.assertRaises(replay.Diverged) as caught:
            side.pad_jobs(10)  # ours made one job more than when it was recorded
        self.assertIn("pad_jobs(10,)", str(caught.exception))
        side = replay.ReplaySide(record_some())
        with self.assertRaises(replay.Diverged):
            side.archive_all()

    def test_missing_case_extra_and_missing_exchanges_diverge(self):
        side = replay.ReplaySide(record_some())
        with self.assertRaises(replay.Diverged):
            side.recorded_results("c2")
        side.query_max_job()
        side.pad_jobs(9)
        with self.assertRaises(replay.Diverged):
            side.finished()  # two of four exchanges
        side.archive(8, 9)
        side.archive_all()
        side.finished()
        with self.assertRaises(replay.Diverged):
            side.query_max_job()  # after the last one

    def test_saved_transcript_loads_only_with_its_key(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "t.json.gz")
            with mock.patch.object(replay, "TRANSCRIPT", path):
                self.assertIsNone(replay.load("k1"))  # none yet
                replay.save(record_some())
                with open(path, "rb") as f:
                    first = f.read()
                self.assertEqual(replay.load("k1"), record_some())
                self.assertIsNone(replay.load("k2"))
                replay.save(record_some())
                with open(path, "rb") as f:
                    self.assertEqual(f.read(), first)  # the same bytes

    def test_key_follows_the_keyed_files(self):
        with tempfile.TemporaryDirectory() as tmp:
            for name in replay.KEYED_FILES:
                os.makedirs(os.path.dirname(os.path.join(tmp, name)), exist_ok=True)
                with open(os.path.join(tmp, name), "w") as f:
                    f.write(name)
            with mock.patch.object(replay, "HERE", tmp):
                before = replay.key(tmp)
                self.assertEqual(replay.key(tmp), before)
                with open(os.path.join(tmp, "cases_node.py"), "a") as f:
                    f.write("# a new case\n")
                self.assertNotEqual(replay.key(tmp), before)

"""The side-by-side oracle: Debian's real Ganeti 3.0 clients against a real Ganeti 3.0
cluster and against our daemons, compared case by case (issue 14).

Set-up (both sides at once): the real cluster of ``real_cluster_up.sh`` (needs
root and the packages of ``make install-oracle``) and our ``ganeti-vcluster``
with the same node names, shaped like the real one.  Every case of
``cases.ALL`` then runs on both sides (see runner.py); each case is one test
here, failing on a difference that is not in ``expected.py`` or that no longer
has the recorded shape.  An expected difference that is gone is reported with a
warning so that its entry can be removed.

The real side's answers can come from a transcript of an earlier live run with
the same key instead (replay.py): then only our side runs.  ``ORACLE_LIVE=1``
runs the real cluster regardless; ``ORACLE_RECORD=1`` writes the transcript of a
live run (commit it after changing a case or anything else the key covers).

``ORACLE_REPORT=/path`` writes every difference with both outputs to that file.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import unittest
import warnings
from concurrent.futures import ThreadPoolExecutor

from twisted.trial.unittest import SynchronousTestCase

from tests.integration.oracle import expected, recorded, replay, runner, sides
from tests.integration.oracle.cases import ALL

#: The whole oracle (set-up included) takes 200-330 s live on a quiet 2-core machine (the
#: machines differ), ~60 s from the transcript; the margin is for a machine other work
#: loads (``ORACLE_WALL_BUDGET`` sets another limit).
WALL_BUDGET = float(os.environ.get("ORACLE_WALL_BUDGET", "450"))


class OracleTest(SynchronousTestCase):
    """One test per case; everything runs once, in setUpClass."""

    outcomes: dict[str, runner.Outcome] = {}
    skip_reason: str | None = None
    timing: dict[str, float] = {}

    @classmethod
    def setUpClass(cls):
        cls.skip_reason = sides.unavailable()
        if cls.skip_reason:
            return
        start = time.monotonic()
        cls.tmp = tempfile.mkdtemp(prefix="ganeti-oracle-")
        os.chmod(cls.tmp, 0o755)  # the real daemons run as gnt-* users
        transcript_key = replay.key(cls.tmp)
        data = None if os.environ.get("ORACLE_LIVE") else replay.load(transcript_key)
        cls.mode = "replay" if data else "live"
        try:
            if data:
                try:
                    set_up, outcomes = cls.run_sides(replay.ReplaySide(data))
                except replay.Diverged as err:
                    warnings.warn(f"oracle: the transcript does not apply ({err}); "
                                  "running the real cluster", stacklevel=1)
                    cls.mode = f"live (the transcript diverged: {err})"
                    cls.ours.stop()
                    shutil.rmtree(cls.ours.dir, ignore_errors=True)
                    data = None
            if not data:
                real: sides.RealSide | replay.Recorder = sides.RealSide(cls.tmp)
                if os.environ.get("ORACLE_RECORD"):
                    real = replay.Recorder(real, transcript_key)
                set_up, outcomes = cls.run_sides(real)
                if isinstance(real, replay.Recorder):
                    replay.save(real.data)
        except BaseException:
            cls.tearDownClass()
            raise
        cls.outcomes = {o.case.id: o for o in outcomes}
        cls.timing = {"mode": cls.mode, "setup": round(set_up, 1),
                      "cases": round(time.monotonic() - start - set_up, 1),
                      "ours": round(sum(o.secs[0] for o in outcomes), 1),
                      "real": round(sum(o.secs[1] for o in outcomes), 1)}
        report = os.environ.get("ORACLE_REPORT")
        if report:
            shape = "; ".join(f"{' '.join(argv)} -> rc {r['rc']} {r['stdout']}{r['stderr']}"
                              for argv, r in zip(sides.SHAPE, cls.ours.shape_results,
                                                 strict=False))
            runner.report(outcomes, report, cls.timing, f"set-up of ours: {shape}")

    @classmethod
    def run_sides(cls, real) -> tuple[float, list[runner.Outcome]]:
        """Start our side (and ``real`` unless it replays), run every case; the set-up's
        seconds and the outcomes.  A replay checks that every exchange took place."""
        start = time.monotonic()
        cls.ours = sides.OurSide(cls.tmp)
        cls.real = real
        with ThreadPoolExecutor(max_workers=2) as pool:
            started = [pool.submit(cls.ours.start)]
            if not isinstance(real, replay.ReplaySide):
                started.append(pool.submit(real.start))
            for future in started:
                future.result()
        set_up = time.monotonic() - start
        outcomes = runner.run_all(ALL, cls.ours, real, expected.EXPECTED)
        if isinstance(real, replay.ReplaySide):
            real.finished()
        return set_up, outcomes

    @classmethod
    def tearDownClass(cls):
        if cls.skip_reason:
            return
        try:
            for side in (getattr(cls, "ours", None), getattr(cls, "real", None)):
                if side is not None:
                    side.stop()
        finally:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def check_case(self, case_id: str) -> None:
        if self.skip_reason:
            raise unittest.SkipTest(self.skip_reason)
        outcome = self.outcomes[case_id]
        if outcome.status == runner.FIXED:
            warnings.warn(f"oracle case {case_id}: the recorded difference is gone "
                          f"({outcome.reason}); remove its entry from expected.py",
                          stacklevel=2)
        if outcome.status in runner.FAILING:
            what = ("a new difference" if outcome.status == runner.NEW else
                    f"the difference recorded ({outcome.reason}) changed")
            self.fail(f"{case_id}: {what} (ours -, real +):\n{outcome.diff}")

    def test_case_count(self):
        """The acceptance item asks for at least 250 cases."""
        self.assertGreaterEqual(len(ALL), 250)
        self.assertEqual(len({c.id for c in ALL}), len(ALL), "case ids must be unique")

    def test_tables_name_cases(self):
        """Every reason names an existing case and has a recorded difference, and every
        recorded difference has a reason: nothing is tolerated without one."""
        ids = {c.id for c in ALL}
        self.assertEqual(set(expected.REASONS) - ids, set())
        self.assertEqual(set(expected.REASONS), set(recorded.DIFFS))
        for case_id, (reason, _diff) in expected.EXPECTED.items():
            self.assertTrue(reason.strip(), case_id)

    def test_wall_time(self):
        if self.skip_reason:
            raise unittest.SkipTest(self.skip_reason)
        total = self.timing["setup"] + self.timing["cases"]
        self.assertLess(total, WALL_BUDGET, f"the oracle took {self.timing}")


def _make_test(case_id: str):
    def test(self: OracleTest) -> None:
        self.check_case(case_id)
    test.__name__ = "test_case_" + case_id.replace("-", "_").replace(".", "_")
    test.__doc__ = f"oracle case {case_id}"
    return test


for _case in ALL:
    _test = _make_test(_case.id)
    setattr(OracleTest, _test.__name__, _test)
del _case, _test

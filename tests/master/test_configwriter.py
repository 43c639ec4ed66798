"""ConfigWriter: serialised, verified, group-committed, nothing visible before it is durable."""

import json
import os

from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import config as configmod
from ganeti.core.errors import ConfigurationError
from ganeti.master.config.configwriter import ConfigWriter
from tests.fakes.configs import small_config


class ControlledRunner:
    """Stands in for the thread pool: each blocking call waits until the test releases it."""

    def __init__(self, fail=False):
        self.calls = []
        self.fail = fail

    def __call__(self, fn, *args):
        d = defer.Deferred()
        self.calls.append((fn, args, d))
        return d

    def finish(self, index=0):
        fn, args, d = self.calls.pop(index)
        try:
            result = fn(*args)
        except Exception as err:
            d.errback(err)
        else:
            d.callback(result)


class ConfigWriterTest(SynchronousTestCase):
    def setUp(self):
        self.path = os.path.join(self.mktemp(), "config.data")
        os.makedirs(os.path.dirname(self.path))
        self.clock = Clock()
        self.clock.advance(1800000000)
        self.runner = ControlledRunner()
        self.writer = ConfigWriter(self.path, small_config(), self.runner, self.clock,
                                   durable=False)

    def on_disk(self):
        with open(self.path) as f:
            return json.load(f)

    def test_change_is_durable_before_acknowledged(self):
        d = self.writer.update(lambda cfg: cfg.cluster.tags.append("a") or "done")
        self.assertNoResult(d)
        self.assertEqual(self.writer.config.cluster.tags, [])  # not visible yet
        self.runner.finish()
        self.assertEqual(self.successResultOf(d), "done")
        self.assertEqual(self.on_disk()["cluster"]["tags"], ["a"])
        self.assertEqual(self.writer.config.cluster.tags, ["a"])
        self.assertEqual(self.writer.config.serial_no, 2)
        self.assertEqual(self.writer.config.mtime, 1800000000)

    def test_group_commit(self):
        first = self.writer.update(lambda cfg: cfg.cluster.tags.append("1"))
        # while the first write is on its way, three more changes queue up
        rest = [self.writer.update(lambda cfg, t=t: cfg.cluster.tags.append(t))
                for t in ("2", "3", "4")]
        self.runner.finish()
        self.successResultOf(first)
        for d in rest:
            self.assertNoResult(d)
        self.assertEqual(len(self.runner.calls), 1)  # one write for the three
        self.runner.finish()
        for d in rest:
            self.successResultOf(d)
        self.assertEqual(self.writer.writes, 2)
        self.assertEqual(self.on_disk()["cluster"]["tags"], ["1", "2", "3", "4"])
        self.assertEqual(self.writer.config.serial_no, 5)  # one bump per change

    def test_failing_change_fails_alone(self):
        def bad(cfg):
            cfg.cluster.tags.append("half-done")
            raise ValueError("boom")

        ok1 = self.writer.update(lambda cfg: cfg.cluster.tags.append("x"))
        failed = self.writer.update(bad)
        ok2 = self.writer.update(lambda cfg: cfg.cluster.tags.append("y"))
        self.runner.finish()
        self.runner.finish()
        self.successResultOf(ok1)
        self.failureResultOf(failed, ValueError)
        self.successResultOf(ok2)
        self.assertEqual(self.on_disk()["cluster"]["tags"], ["x", "y"])

    def test_inconsistent_change_is_refused(self):
        d = self.writer.update(lambda cfg: setattr(cfg.cluster, "master_node", "nobody"))
        f = self.failureResultOf(d, ConfigurationError)
        self.assertIn("inconsistent", str(f.value))
        self.assertEqual(self.runner.calls, [])  # nothing was written
        self.assertEqual(self.writer.config.serial_no, 1)

    def test_write_failure_changes_nothing(self):
        self.writer.path = os.path.join(self.path + ".missing-dir", "config.data")
        d = self.writer.update(lambda cfg: cfg.cluster.tags.append("lost"))
        self.runner.finish()
        self.failureResultOf(d, FileNotFoundError)
        self.assertEqual(self.writer.config.cluster.tags, [])
        self.assertEqual(self.writer.config.serial_no, 1)
        # and the writer keeps working afterwards
        self.writer.path = self.path
        d2 = self.writer.update(lambda cfg: cfg.cluster.tags.append("ok"))
        self.runner.finish()
        self.successResultOf(d2)

    def test_listeners_see_each_commit(self):
        seen = []
        self.writer.add_listener(lambda cfg: seen.append(cfg.serial_no))
        self.writer.update(lambda cfg: None)
        self.runner.finish()
        self.assertEqual(seen, [2])

    def test_written_file_loads(self):
        self.writer.update(lambda cfg: cfg.cluster.tags.append("z"))
        self.runner.finish()
        self.assertEqual(configmod.load_file(self.path).cluster.tags, ["z"])

"""ConfigWriter: serialised, verified, group-committed, nothing visible before it is durable."""

import json
import os

from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import config as configmod
from ganeti.core.errors import ConfigurationError
from ganeti.master.config.configwriter import ConfigWriter
from tests.core.test_configdraft import with_instances
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


class UniqueValuesTest(SynchronousTestCase):
    """Values that must be unique across instances are checked against the whole
    config, at the cost of the change (the writer's index)."""

    def setUp(self):
        self.path = os.path.join(self.mktemp(), "config.data")
        os.makedirs(os.path.dirname(self.path))
        self.runner = ControlledRunner()
        self.cfg = with_instances()
        self.writer = ConfigWriter(self.path, self.cfg, self.runner, Clock(), durable=False)
        self.a, self.b = list(self.cfg.instances)[:2]

    def set_mac(self, uuid, mac):
        def change(cfg):
            cfg.instances[uuid].nics[0].mac = mac
        return self.writer.update(change)

    def test_a_clash_with_an_untouched_instance_is_refused(self):
        mac = self.cfg.instances[self.b].nics[0].mac
        f = self.failureResultOf(self.set_mac(self.a, mac), ConfigurationError)
        self.assertIn(f"mac {mac}: used by more than one NIC", str(f.value))
        self.assertEqual(self.runner.calls, [])  # nothing was written

    def test_a_value_freed_by_a_commit_may_be_taken(self):
        old = self.cfg.instances[self.a].nics[0].mac
        d = self.set_mac(self.a, "aa:03:00:00:00:01")
        self.runner.finish()
        self.successResultOf(d)
        d = self.set_mac(self.b, old)
        self.runner.finish()
        self.successResultOf(d)

    def test_a_failed_write_takes_the_index_back(self):
        # the index exists (an earlier change built it): the failed batch is undone
        d = self.set_mac(list(self.cfg.instances)[2], "aa:03:00:00:00:09")
        self.runner.finish()
        self.successResultOf(d)
        self.assertIsNotNone(self.writer._unique)
        self.check_failed_write()

    def test_a_failed_write_drops_an_index_built_in_its_batch(self):
        self.assertIsNone(self.writer._unique)
        self.check_failed_write()

    def check_failed_write(self):
        self.writer.path = os.path.join(self.path + ".missing-dir", "config.data")
        d = self.set_mac(self.a, "aa:03:00:00:00:02")
        self.runner.finish()
        self.failureResultOf(d, FileNotFoundError)
        self.writer.path = self.path
        # the lost change holds nothing: its value is free, its old value still taken
        d = self.set_mac(self.b, "aa:03:00:00:00:02")
        self.runner.finish()
        self.successResultOf(d)
        old = self.cfg.instances[self.a].nics[0].mac
        self.failureResultOf(self.set_mac(self.b, old), ConfigurationError)

    def test_changes_in_one_batch_see_each_other(self):
        first = self.writer.update(lambda cfg: cfg.cluster.tags.append("x"))
        taken = self.set_mac(self.a, "aa:03:00:00:00:03")  # queued behind the first
        clash = self.set_mac(self.b, "aa:03:00:00:00:03")  # same batch, same value
        self.runner.finish()
        self.successResultOf(first)
        self.runner.finish()
        self.successResultOf(taken)
        self.failureResultOf(clash, ConfigurationError)

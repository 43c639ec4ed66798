"""The journal mode of the config writer: durability, recovery, checkpoints, delta replication."""

import os

from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import config as configmod
from ganeti.core import configjournal
from ganeti.core.errors import ConfigurationError
from ganeti.core.paths import Paths
from ganeti.master.config.configwriter import ConfigWriter
from ganeti.noded.backend import configstore
from ganeti.noded.backend.context import NodeContext, inline_runner
from tests.fakes.configs import small_config
from tests.master.test_configwriter import ControlledRunner


def inline(fn, *args):
    return defer.maybeDeferred(fn, *args)


class JournalFileTest(SynchronousTestCase):
    def setUp(self):
        self.path = os.path.join(os.path.abspath(self.mktemp()), "j")
        os.makedirs(os.path.dirname(self.path))

    def test_append_read_and_torn_tail(self):
        configjournal.append(self.path, "one")
        configjournal.append(self.path, "two")
        self.assertEqual(configjournal.read(self.path), (["one", "two"], False))
        with open(self.path, "ab") as f:
            f.write(configjournal.encode("three")[:-4])  # a crash mid-append
        self.assertEqual(configjournal.read(self.path), (["one", "two"], True))

    def test_damage_before_the_end_is_an_error(self):
        configjournal.append(self.path, "one")
        configjournal.append(self.path, "two")
        with open(self.path, "r+b") as f:
            f.seek(6)
            f.write(b"X")
        with self.assertRaises(ConfigurationError):
            configjournal.read(self.path)

    def test_failed_append_leaves_nothing(self):
        configjournal.append(self.path, "one")
        real = os.write
        os.write = lambda fd, data: real(fd, data[:3]) if len(data) > 3 else 0
        try:
            with self.assertRaises(OSError):
                configjournal.append(self.path, "a longer record")
        finally:
            os.write = real
        self.assertEqual(configjournal.read(self.path), (["one"], False))

    def test_rewrite_and_remove(self):
        configjournal.append(self.path, "one")
        configjournal.rewrite(self.path, ["two"])
        self.assertEqual(configjournal.read(self.path), (["two"], False))
        configjournal.rewrite(self.path, [])
        self.assertFalse(os.path.exists(self.path))


class JournalWriterTest(SynchronousTestCase):
    def setUp(self):
        self.path = os.path.join(os.path.abspath(self.mktemp()), "config.data")
        os.makedirs(os.path.dirname(self.path))
        with open(self.path, "w") as f:
            f.write(configmod.dump(small_config()))
        self.clock = Clock()
        self.clock.advance(1800000000)
        self.runner = ControlledRunner()
        self.writer = self.make(self.runner)

    def make(self, runner, **kw):
        loaded = configmod.load_with_text(self.path)
        return ConfigWriter(self.path, loaded.config, runner, self.clock, durable=False,
                            text=loaded.text, recovered=bool(loaded.replayed or loaded.torn),
                            journal_from=0, checkpoint_interval=0, **kw)

    def finish_all(self):
        while self.runner.calls:
            self.runner.finish()

    def finish_appends(self, runner=None):
        runner = runner or self.runner
        while any(fn is configjournal.append for fn, _, _ in runner.calls):
            runner.finish(next(i for i, (fn, _, _) in enumerate(runner.calls)
                               if fn is configjournal.append))

    def test_acknowledged_after_the_journal_append_only(self):
        d = self.writer.update(lambda cfg: cfg.cluster.tags.append("a"))
        self.assertNoResult(d)
        fn, args, _ = self.runner.calls[0]
        self.assertIs(fn, configjournal.append)
        self.runner.finish()  # the append: acknowledged, checkpoint still pending
        self.successResultOf(d)
        self.assertEqual(configmod.load(open(self.path).read()).cluster.tags, [])
        self.assertEqual(configmod.load_file(self.path).cluster.tags, ["a"])  # + journal
        self.finish_all()  # checkpoint, then the trim of the journal
        self.assertEqual(configmod.load(open(self.path).read()).cluster.tags, ["a"])
        self.assertFalse(os.path.exists(configjournal.journal_path(self.path)))
        self.assertEqual(self.writer.checkpoints, 1)

    def test_checkpoints_coalesce_and_lag_by_one(self):
        first = self.writer.update(lambda cfg: cfg.cluster.tags.append("1"))
        self.runner.finish()  # append 1; checkpoint of serial 2 queued
        self.successResultOf(first)
        rest = [self.writer.update(lambda cfg, t=t: cfg.cluster.tags.append(t))
                for t in "234"]
        self.finish_appends()  # while the checkpoint of serial 2 still runs
        for d in rest:
            self.successResultOf(d)
        self.assertEqual(len(self.runner.calls), 1)  # that checkpoint, nothing more yet
        self.finish_all()
        self.assertEqual(self.writer.checkpoints, 2)  # serial 2, then the latest (3 changes)
        self.assertEqual(configmod.load(open(self.path).read()).cluster.tags, list("1234"))
        self.assertFalse(os.path.exists(configjournal.journal_path(self.path)))

    def test_crash_between_journal_and_checkpoint_recovers(self):
        for t in "ab":
            self.writer.update(lambda cfg, t=t: cfg.cluster.tags.append(t))
            self.finish_appends()  # only the appends; checkpoints never run (crash)
        with open(configjournal.journal_path(self.path), "ab") as f:
            f.write(b"17 0badc0de {\"torn")  # and a torn record of a batch never acked
        loaded = configmod.load_with_text(self.path)
        self.assertEqual(loaded.config.cluster.tags, ["a", "b"])
        self.assertEqual((loaded.replayed, loaded.torn), (2, True))
        self.assertEqual(loaded.text.render(), configmod.dump(loaded.config))
        runner = ControlledRunner()
        writer = self.make(runner)  # recovery: a complete checkpoint first, journal gone
        d = writer.update(lambda cfg: cfg.cluster.tags.append("c"))
        while runner.calls:
            runner.finish()
        self.successResultOf(d)
        self.assertEqual(configmod.load(open(self.path).read()).cluster.tags, ["a", "b", "c"])
        self.assertFalse(os.path.exists(configjournal.journal_path(self.path)))

    def test_close_leaves_a_complete_checkpoint(self):
        writer = self.make(inline)
        writer._kick_checkpoint = lambda: None  # no background checkpoints at all
        for t in "xyz":
            self.successResultOf(writer.update(lambda cfg, t=t: cfg.cluster.tags.append(t)))
        self.assertTrue(os.path.exists(configjournal.journal_path(self.path)))
        self.successResultOf(defer.Deferred.fromCoroutine(writer.close()))
        self.assertEqual(configmod.load(open(self.path).read()).cluster.tags, list("xyz"))
        self.assertFalse(os.path.exists(configjournal.journal_path(self.path)))

    def test_failed_append_changes_nothing(self):
        self.writer.path = os.path.join(self.path + ".missing", "config.data")
        d = self.writer.update(lambda cfg: cfg.cluster.tags.append("lost"))
        self.runner.finish()
        self.failureResultOf(d, FileNotFoundError)
        self.assertEqual(self.writer.config.serial_no, 1)
        self.writer.path = self.path
        d = self.writer.update(lambda cfg: cfg.cluster.tags.append("ok"))
        self.finish_all()
        self.successResultOf(d)
        self.assertEqual(configmod.load_file(self.path).cluster.tags, ["ok"])


class NodeStoreTest(SynchronousTestCase):
    """A candidate's copy follows the master's records; behind or without a copy: False."""

    def setUp(self):
        root = os.path.abspath(self.mktemp())
        self.master = os.path.join(root, "master", "config.data")
        os.makedirs(os.path.dirname(self.master))
        with open(self.master, "w") as f:
            f.write(configmod.dump(small_config()))
        self.node = Paths.for_node(os.path.join(root, "node2.test"), "node2.test")
        os.makedirs(self.node.data_dir)
        self.node_clock = Clock()
        self.ctx = NodeContext(paths=self.node, clock=self.node_clock, run=inline_runner)
        self.records = []
        loaded = configmod.load_with_text(self.master)
        self.writer = ConfigWriter(self.master, loaded.config, inline, Clock(), durable=False,
                                   text=loaded.text, journal_from=0, checkpoint_interval=0)

        async def distributor(cfg, update, force):
            self.records.append(update.record)
            return None
        self.writer.set_distributor(distributor)

    def tearDown(self):
        configstore._STORES.pop(self.node.config_file, None)

    def apply(self, record):
        return self.successResultOf(configstore.config_update(self.ctx, record))

    def test_no_copy_then_full_then_records(self):
        self.successResultOf(self.writer.update(lambda c: c.cluster.tags.append("1")))
        self.assertFalse(self.apply(self.records[-1]))  # no base: the master sends all
        with open(self.node.config_file, "w") as f:  # what upload_file would write
            f.write(self.writer.text)
        configstore.store_for(self.ctx).reset()
        for t in "234":
            self.successResultOf(self.writer.update(lambda c, t=t: c.cluster.tags.append(t)))
            self.assertTrue(self.apply(self.records[-1]))
        self.assertTrue(self.apply(self.records[-1]))  # a repeated record is harmless
        self.assertTrue(os.path.exists(configjournal.journal_path(self.node.config_file)))
        self.node_clock.advance(5)  # the coalesced rewrite of config.data
        self.assertFalse(os.path.exists(configjournal.journal_path(self.node.config_file)))
        with open(self.node.config_file) as f:
            self.assertEqual(f.read(), self.writer.text)  # complete, same bytes

    def test_a_gap_asks_for_everything(self):
        with open(self.node.config_file, "w") as f:
            f.write(self.writer.text)
        self.successResultOf(self.writer.update(lambda c: c.cluster.tags.append("1")))
        self.successResultOf(self.writer.update(lambda c: c.cluster.tags.append("2")))
        self.assertFalse(self.apply(self.records[-1]))  # missed serial 2
        self.assertTrue(self.apply(self.records[-2]))
        self.assertTrue(self.apply(self.records[-1]))
        # durable in the node's journal at once, in config.data at the next rewrite
        self.assertEqual(configmod.load_file(self.node.config_file).cluster.tags, ["1", "2"])
        self.node_clock.advance(5)
        self.assertEqual(configmod.load(open(self.node.config_file).read()).cluster.tags,
                         ["1", "2"])

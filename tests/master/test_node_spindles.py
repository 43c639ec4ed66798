"""Node query fields sptotal/spfree as Ganeti 3.0 reports them (htools read them).

Ganeti takes a node's spindles from its lvm-pv storage report: a node is asked for one
only when an LVM template (plain, drbd) is enabled, and without exclusive storage the
report holds zero spindles.  htools' LUXI and RAPI loaders take a missing ``spfree`` as
0, so on a file/diskless cluster they see 0 free spindles on real Ganeti and must here.
"""

from __future__ import annotations

from dataclasses import replace

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import constants as c
from ganeti.core.query import NODATA, OFFLINE
from ganeti.master.query.nodequeries import NODE_GETTERS, NodeItem
from tests.fakes.configs import small_config
from tests.fakes.instances import add_instance

LIVE = {"memory_total": 4096, "memory_free": 2048, "disk_total": 1000, "disk_free": 500}


class SpindleFieldsTest(SynchronousTestCase):
    def setUp(self) -> None:
        self.cfg = small_config()
        self.node = self.cfg.master

    def spindles(self, node=None, live=LIVE):
        item = NodeItem(self.cfg, node or self.node, live)
        return NODE_GETTERS["sptotal"](item), NODE_GETTERS["spfree"](item)

    def enable(self, *templates: str) -> None:
        self.cfg.cluster.enabled_disk_templates = list(templates)

    def test_no_lvm_template_no_data(self):
        self.enable(c.DT_FILE, c.DT_DISKLESS)
        self.assertEqual(self.spindles(), (NODATA, NODATA))

    def test_lvm_without_exclusive_storage_reports_zero(self):
        self.enable(c.DT_DISKLESS, c.DT_PLAIN)
        self.cfg.cluster.ndparams[c.ND_SPINDLE_COUNT] = 4
        self.assertEqual(self.spindles(), (0, 0))

    def test_exclusive_storage_counts_spindles_in_use(self):
        self.enable(c.DT_PLAIN)
        self.cfg.cluster.ndparams[c.ND_EXCLUSIVE_STORAGE] = True
        self.cfg.cluster.ndparams[c.ND_SPINDLE_COUNT] = 4
        self.assertEqual(self.spindles(), (4, 4))
        inst = add_instance(self.cfg, "web.test", None, c.DT_PLAIN, (1024,))
        for uuid in inst.disks:
            self.cfg.disks[uuid] = replace(self.cfg.disks[uuid], spindles=3)
        self.assertEqual(self.spindles(), (4, 1))

    def test_offline_and_silent_nodes(self):
        self.enable(c.DT_PLAIN)
        self.assertEqual(self.spindles(live=None), (NODATA, NODATA))
        self.node.offline = True
        self.assertEqual(self.spindles(), (OFFLINE, OFFLINE))

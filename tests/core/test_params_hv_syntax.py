"""Hypervisor parameter syntax checks of ``gnt-cluster modify -H`` (Ganeti's
CheckParameterSyntax), found by the side-by-side oracle (case
cluster-modify-hvparams-bad-value)."""

from __future__ import annotations

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core.errors import HypervisorError
from ganeti.core.opcodes import table
from ganeti.core.params_cluster import compute_cluster_change
from tests.master.test_jobqueue import small_config


def _op(**params):
    return table.OP_CLUSTER_SET_PARAMS.validate({"OP_ID": "OP_CLUSTER_SET_PARAMS", **params})


class MigrationModeTest(SynchronousTestCase):
    def test_bad_migration_mode_is_refused_with_ganetis_words(self):
        cfg = small_config()
        with self.assertRaises(HypervisorError) as caught:
            compute_cluster_change(cfg, _op(hvparams={"fake": {"migration_mode": "sideways"}}))
        self.assertEqual(str(caught.exception.args[0]),
                         "Parameter 'migration_mode' fails syntax check: invalid migration "
                         "mode (current value: 'sideways')")
        self.assertEqual(cfg.cluster.hvparams.get("fake", {}).get("migration_mode", "live"),
                         "live")

    def test_both_modes_are_accepted(self):
        for mode in ("live", "non-live"):
            change = compute_cluster_change(small_config(), _op(
                hvparams={"fake": {"migration_mode": mode}}))
            self.assertEqual(change.cluster.hvparams["fake"]["migration_mode"], mode)

"""ganeti.core.placement.pairs: the vectorised pair scores equal the pair-by-pair ones.

The reference places the instance on every (primary, secondary) pair with the
state's own operations and scores each with the incremental statistics; the
vectorised version must give the same valid pairs, the same scores (to 1e-9) and
the same failure counts, on inputs with and without location and exclusion tags,
drbd peers, exclusive storage and several groups.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
from twisted.trial.unittest import SynchronousTestCase

from ganeti.core.placement import model, requests, wire
from ganeti.core.placement.nodestate import policy_failure
from ganeti.core.placement.pairs import pair_scores, pair_scores_scalar
from ganeti.core.placement.state import ClusterState

DATA = Path(__file__).resolve().parent.parent / "data" / "iallocator"


def load(name: str) -> dict:
    return json.loads(gzip.decompress((DATA / name).read_bytes()))


def drbd_request(data: dict, memory: int, tags: list[str]) -> requests.Allocate:
    return requests.Allocate(name="new", memory=memory, vcpus=1, disk_template="drbd",
                             disks=(model.Disk(10240),), tags=tuple(tags))


class PairsTest(SynchronousTestCase):
    CASES = (("gen10-tags.in.json.gz", ["service:web", "rack:r1"]),
             ("gen10-tags.in.json.gz", []),
             ("gen10-allocate-drbd.in.json.gz", []),
             ("gen40-groups-allocate-drbd.in.json.gz", []))

    def test_vectorised_equals_pair_by_pair(self):
        compared = 0
        for name, tags in self.CASES:
            data = load(name)
            ialloc = wire.parse_input(data)
            for memory in (512, 4096, 30000):
                for force in (False, True):
                    state = ClusterState(ialloc.cluster)
                    req = drbd_request(data, memory, tags)
                    for group in state.groups.values():
                        cands = state.candidates(group.uuid)
                        inst = state.inst_from_request(req)
                        policy = {c: policy_failure(inst, group) for c in cands}
                        fast = pair_scores(state, inst, cands, state.stats, force, policy)
                        slow = pair_scores_scalar(state, inst, cands, state.stats, force,
                                                  policy)
                        where = (name, memory, force, group.name)
                        np.testing.assert_array_equal(np.isfinite(fast.scores),
                                                      np.isfinite(slow.scores), str(where))
                        ok = np.isfinite(slow.scores)
                        np.testing.assert_allclose(fast.scores[ok], slow.scores[ok],
                                                   rtol=0, atol=1e-9, err_msg=str(where))
                        self.assertEqual(fast.failures, slow.failures, where)
                        compared += int(ok.sum())
        self.assertGreater(compared, 1000)

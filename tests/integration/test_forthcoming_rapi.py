"""Seed 004's scenario through our ganeti-rapi, with Debian's real RAPI client:
reserve 50 instances without names at once on a cluster that fits exactly 50,
all succeed and the 51st is refused for capacity; then name each reservation by
its UUID, commit it and start it.

The cluster's capacity is made exact by the vCPU ratio of its instance policy
(the built-in allocator's FailCPU): each node takes 25 one-vCPU instances,
whatever the host's CPU count.  Our ganeti-place is the cluster's default
allocator (none is set), so it places every reservation."""

from tests.integration.test_rapi_compat import RapiClientCase, call

COUNT = 50
PER_NODE = COUNT // 2


class ReservationScenarioTest(RapiClientCase):
    PREFIX = "ganeti-forth-rapi-"
    NODES = 2

    def finished(self, *job_ids):
        """Each job's final status and result."""
        waits = [call("wait_job", j, 300.0) for j in job_ids]
        jobs = [call("GetJobStatus", j) for j in job_ids]
        out = self.rapi(*waits, *jobs)
        return list(zip(out[:len(job_ids)], [j["opresult"] for j in out[len(job_ids):]],
                        strict=True))

    @staticmethod
    def reservation():
        """A nameless reservation: only what it holds (Debian's CreateInstance needs the
        mode, name, template, disks and NICs positionally; the name is null)."""
        return call("CreateInstance", "create", None, "diskless", [], [{}], forthcoming=True,
                    hypervisor="fake", beparams={"maxmem": 128, "minmem": 128, "vcpus": 1})

    def test_fifty_reservations_then_commit_each(self):
        (node,) = self.rapi(call("GetNode", self.cluster.nodes[0]))
        # vCPUs in use / physical CPUs <= ratio, the node's own CPUs ("cnos") counted
        ratio = (PER_NODE + node["cnos"]) / node["ctotal"]
        (job,) = self.rapi(call("ModifyCluster", ipolicy={"vcpu-ratio": ratio}))
        self.assertEqual(self.finished(job)[0][0], "success")

        job_ids = self.rapi(*[self.reservation() for _ in range(COUNT)])
        outcomes = self.finished(*job_ids)
        self.assertEqual([status for status, _ in outcomes], ["success"] * COUNT, outcomes)
        results = [result[0] for _, result in outcomes]
        uuids = [r["uuid"] for r in results]
        self.assertEqual(len(set(uuids)), COUNT)
        placed = [r["nodes"][0] for r in results]
        self.assertEqual(sorted(placed.count(n) for n in self.cluster.nodes),
                         [PER_NODE, PER_NODE])

        (job,) = self.rapi(self.reservation())
        ((status, result),) = self.finished(job)
        self.assertEqual(status, "error")
        self.assertEqual(result[0][0], "OpPrereqError", result)
        self.assertEqual(result[0][1][1], "insufficient_resources", result)
        self.assertIn("FailCPU", result[0][1][0])

        names = [f"res{i}.vcluster.test" for i in range(COUNT)]
        renames = self.rapi(*[call("RenameInstance", uuid, name, ip_check=False,
                                   name_check=False)
                              for uuid, name in zip(uuids, names, strict=True)])
        self.assertEqual({s for s, _ in self.finished(*renames)}, {"success"})

        body = {"os": "busybox", "no_install": True, "name_check": False, "ip_check": False}
        commits = self.rapi(*[call("_SendRequest", "POST", f"/2/instances/{name}/create",
                                   None, body) for name in names])
        committed = self.finished(*commits)
        self.assertEqual([s for s, _ in committed], ["success"] * COUNT, committed)
        for (_, result), nodes in zip(committed, (r["nodes"] for r in results), strict=True):
            self.assertEqual(result[0], nodes)  # made real where it was reserved
        starts = self.rapi(*[call("StartupInstance", name) for name in names])
        self.assertEqual({s for s, _ in self.finished(*starts)}, {"success"})

        (rows,) = self.rapi(call("Query", "instance", ["name", "status", "forthcoming",
                                                       "pnode"]))
        got = {row[0][1]: [v for _, v in row[1:]] for row in rows["data"]}
        self.assertEqual(sorted(got), sorted(names))
        for name, placed_on in zip(names, placed, strict=True):
            self.assertEqual(got[name], ["running", False, placed_on], name)

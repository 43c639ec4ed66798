"""Debian's real GanetiRapiClient places instances through our ganeti-rapi:
CreateInstance with ``iallocator`` (Debian's hail) and InstancesMultiAlloc (the
built-in), whose job result is Ganeti's (allocatable, failed, jobs)."""

from tests.integration.test_rapi_compat import RapiClientCase, call


def allocation(name):
    """What the client's InstanceAllocation builds (its required fields and ours)."""
    return {"mode": "create", "name": name, "disk_template": "file",
            "disks": [{"size": 1024}], "nics": [{}], "os": "busybox",
            "name_check": False, "ip_check": False, "hypervisor": "fake",
            "beparams": {"maxmem": 128, "minmem": 128}}


class AllocatorRapiTest(RapiClientCase):
    PREFIX = "ganeti-alloc-rapi-"
    NODES = 2

    def finished(self, job_id):
        self.assertIsInstance(job_id, int, job_id)
        (status,) = self.rapi(call("wait_job", job_id))
        (job,) = self.rapi(call("GetJobStatus", job_id))
        return status, job

    def test_create_with_hail_and_multi_alloc_with_the_built_in(self):
        (job_id,) = self.rapi(call("CreateInstance", "create", "h1.vcluster.test", "file",
                                   [{"size": 1024}], [{}], os="busybox", iallocator="hail",
                                   name_check=False, ip_check=False, hypervisor="fake",
                                   beparams={"maxmem": 128, "minmem": 128}))
        status, job = self.finished(job_id)
        self.assertEqual(status, "success", job["opresult"])
        (inst,) = self.rapi(call("GetInstance", "h1.vcluster.test"))
        self.assertIn(inst["pnode"], self.cluster.nodes)
        (job_id,) = self.rapi(call("InstancesMultiAlloc",
                                   [allocation(f"m{i}.vcluster.test") for i in range(2)],
                                   iallocator="ganeti-place"))
        status, job = self.finished(job_id)
        self.assertEqual(status, "success", job["opresult"])
        result = job["opresult"][0]
        self.assertEqual((sorted(result["allocatable"]), result["failed"]),
                         (["m0.vcluster.test", "m1.vcluster.test"], []))
        for ok, created in result["jobs"]:
            self.assertTrue(ok)
            self.assertEqual(self.finished(created)[0], "success")
        (names,) = self.rapi(call("GetInstances"))
        self.assertEqual(sorted(names), ["h1.vcluster.test", "m0.vcluster.test",
                                         "m1.vcluster.test"])

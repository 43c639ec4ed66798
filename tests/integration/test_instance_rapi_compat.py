"""Debian's real GanetiRapiClient (python3-ganeti-rapi) drives the lifecycle of an
instance through our ganeti-rapi: CreateInstance (a file disk, our busybox OS, the
fake hypervisor), GetInstance(s), Shutdown/Startup/RebootInstance, ModifyInstance,
DeleteInstance."""

from tests.integration.test_rapi_compat import (
    NODE2,
    RapiClientCase,
    call,
)

NAME = "web1.vcluster.test"


class InstanceRapiCompatTest(RapiClientCase):
    """One cluster for the class: each test leaves no instance behind."""

    PREFIX = "ganeti-instance-rapi-"
    NODES = 2

    def job(self, c):
        """Run a call that answers a job id; wait for the job; its final status."""
        (job_id,) = self.rapi(c)
        self.assertIsInstance(job_id, int, job_id)
        (status,) = self.rapi(call("wait_job", job_id))
        return status

    def get(self):
        (inst,) = self.rapi(call("GetInstance", NAME))
        return inst

    def test_lifecycle(self):
        created = self.job(call("CreateInstance", "create", NAME, "file", [{"size": 1024}],
                                [{}], os="busybox", pnode=NODE2, name_check=False,
                                ip_check=False, hypervisor="fake",
                                beparams={"maxmem": 128, "minmem": 128}))
        self.assertEqual(created, "success")
        inst = self.get()
        self.assertEqual((inst["status"], inst["pnode"], inst["disk_template"],
                          inst["disk.sizes"], inst["os"]),
                         ("running", NODE2, "file", [1024], "busybox"))
        (names,) = self.rapi(call("GetInstances"))
        self.assertEqual(names, [NAME])
        self.assertEqual(self.job(call("ShutdownInstance", NAME)), "success")
        self.assertEqual(self.get()["status"], "ADMIN_down")
        self.assertEqual(self.job(call("StartupInstance", NAME)), "success")
        self.assertEqual(self.get()["status"], "running")
        self.assertEqual(self.job(call("RebootInstance", NAME, reboot_type="hard")),
                         "success")
        self.assertEqual(self.job(call("ModifyInstance", NAME,
                                       beparams={"maxmem": 256})), "success")
        self.assertEqual(self.get()["beparams"]["maxmem"], 256)
        self.assertEqual(self.job(call("ShutdownInstance", NAME)), "success")
        self.assertEqual(self.job(call("DeleteInstance", NAME)), "success")
        (names,) = self.rapi(call("GetInstances"))
        self.assertEqual(names, [])

    def test_refusal_is_a_failed_job_with_ganetis_error(self):
        (job_id,) = self.rapi(call("CreateInstance", "create", NAME, "file", [{"size": 1}],
                                   [{}], os="busybox", pnode="nosuch.vcluster.test",
                                   name_check=False, ip_check=False))
        (status,) = self.rapi(call("wait_job", job_id))
        self.assertEqual(status, "error")
        (job,) = self.rapi(call("GetJobStatus", job_id))
        self.assertEqual(job["opresult"][0][0], "OpPrereqError")
        self.assertIn("nosuch.vcluster.test", job["opresult"][0][1][0])

"""Ganeti's own RAPI client library and htools against our ganeti-rapi, on a real
two-node virtual cluster (HTTPS, the users file made by cluster init).

Debian's ``python3-ganeti-rapi`` runs under Debian's ``/usr/bin/python3`` only, so
each test sends a list of client calls to a small driver script run with that
interpreter; the driver answers with every call's result or error.  Waiting for
jobs is the client's WaitForJobChange (never a sleep).  htools
(``ganeti-htools-3.0``) read the cluster with ``-m https://<master>:5080``.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import unittest

from tests.integration.clustercase import (
    RAPI_CLIENT,  # noqa: F401  (imported from here by the other compat tests)
    SYSTEM_PYTHON,
    ClusterCase,
    needs_rapi_client,
)
from tests.integration.helpers import run
from tests.integration.jobtools import FINAL, delay, wait_for_status

HTOOLS = "/usr/lib/ganeti/3.0/usr/bin"
NODE2 = "node2.vcluster.test"

DRIVER = textwrap.dedent('''
    """Run GanetiRapiClient calls read as JSON from stdin; print their outcomes as JSON."""
    import json
    import sys
    import time

    from ganeti.rapi import client

    FINAL = ("success", "error", "canceled")


    def make_client(opts):
        kwargs = {"port": opts["port"]}
        if opts.get("user") is not None:
            kwargs.update(username=opts["user"], password=opts["password"])
        if opts.get("cafile"):
            kwargs["curl_config_fn"] = client.GenericCurlConfig(cafile=opts["cafile"])
        return client.GanetiRapiClient(opts["host"], **kwargs)


    def wait_job(rapi, job_id, timeout=60.0):
        """Follow a job with WaitForJobChange until it is finished; its status."""
        deadline = time.monotonic() + timeout
        prev, serial = None, None
        while time.monotonic() < deadline:
            result = rapi.WaitForJobChange(job_id, ["status"], prev, serial)
            if result is None:
                continue
            prev = result["job_info"]
            for entry in result["log_entries"]:
                serial = entry[0]
            if prev[0] in FINAL:
                return prev[0]
        raise AssertionError("job %s did not finish in %ss" % (job_id, timeout))


    def main():
        request = json.load(sys.stdin)
        rapi = make_client(request["client"])
        out = []
        for name, args, kwargs in request["calls"]:
            try:
                if name == "wait_job":
                    value = wait_job(rapi, *args)
                else:
                    value = getattr(rapi, name)(*args, **kwargs)
                out.append({"ok": value})
            except client.GanetiApiError as err:
                out.append({"error": {"class": type(err).__name__, "code": err.code,
                                      "message": str(err)}})
        json.dump(out, sys.stdout)


    main()
''')


def call(name, *args, **kwargs):
    """One client call for :meth:`RapiCompatTest.rapi`."""
    return [name, list(args), kwargs]


def ganeti_opcode_params():
    """The parameter names of Ganeti 3.0's OpClusterSetParams, OpNodeSetParams and
    OpGroupSetParams, as its QA reads them (skips the test without ganeti-3.0)."""
    if not os.path.exists("/usr/share/ganeti/default/ganeti/opcodes.py"):
        raise unittest.SkipTest("Debian's ganeti-3.0 is not installed")
    script = ("import json, sys\n"
              "sys.path[:] = [p for p in sys.path if p and 'site-packages' not in p]\n"
              "sys.path.insert(0, '/usr/share/ganeti/default')\n"
              "from ganeti import opcodes\n"
              "print(json.dumps({n: [p[0] for p in getattr(opcodes, n).OP_PARAMS] for n in "
              "('OpClusterSetParams', 'OpNodeSetParams', 'OpGroupSetParams')}))\n")
    proc = subprocess.run([SYSTEM_PYTHON, "-I", "-c", script], capture_output=True,
                          text=True, timeout=60, check=True)
    return json.loads(proc.stdout)


def write_driver(directory):
    """The driver script written into ``directory``; its path."""
    driver = os.path.join(directory, "driver.py")
    with open(driver, "w", encoding="utf-8") as f:
        f.write(DRIVER)
    return driver


class RapiClientCase(ClusterCase):
    """A cluster for Debian's RAPI client: ``cls.driver`` (the driver script, in the
    cluster's temporary directory ``cls.tmp``) and the RAPI ``cls.user`` and
    ``cls.password``."""

    REQUIRES = (needs_rapi_client,)

    @classmethod
    def setUpCluster(cls):
        cls.tmp = cls.cluster.tmp
        cls.driver = write_driver(cls.tmp)
        cls.user, cls.password = cls.cluster.rapi_credentials()

    @property
    def opts(self):
        """The client's options: the master's RAPI, as the cluster's RAPI user."""
        return {"host": self.cluster.ips[0], "port": 5080, "user": self.user,
                "password": self.password}

    def rapi(self, *calls):
        """Run ``calls`` (see :func:`call`) with Debian's client; their values."""
        return run_driver(self.driver, self.opts, calls)


def run_driver(driver, opts, calls):
    """Run the calls with Debian's client; each call's value (errors as dicts)."""
    request = json.dumps({"client": opts, "calls": list(calls)})
    # -I: Debian's interpreter must import Debian's ganeti, whatever the environment
    proc = subprocess.run([SYSTEM_PYTHON, "-I", driver], input=request,
                          capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0:
        raise AssertionError(f"the client driver failed ({proc.returncode}): {proc.stderr}")
    return [r["ok"] if "ok" in r else r for r in json.loads(proc.stdout)]


class RapiCompatTest(RapiClientCase):
    """GanetiRapiClient and htools against a two-node virtual cluster."""

    PREFIX = "ganeti-rapi-"
    NODES = 2

    @classmethod
    def setUpCluster(cls):
        super().setUpCluster()
        cls.host = cls.cluster.ips[0]
        cls.rapi_pem = os.path.join(cls.cluster.root, "var/lib/ganeti/rapi.pem")

    def rapi(self, *calls, user="default", password=None, cafile=None):
        """Run the calls with Debian's client; each call's value (errors as dicts)."""
        opts = {"host": self.host, "port": 5080, "cafile": cafile}
        if user == "default":
            opts.update(user=self.user, password=self.password)
        elif user is not None:
            opts.update(user=user, password=password)
        return run_driver(self.driver, opts, calls)

    def assertApiError(self, outcome, code):
        self.assertIsInstance(outcome, dict)
        self.assertEqual((outcome.get("error") or {}).get("code"), code, outcome)

    def test_cluster_information(self):
        version, features, info, info_ca = self.rapi(
            call("GetVersion"), call("GetFeatures"), call("GetInfo", reason="look"),
            call("GetInfo"))
        self.assertEqual(version, 2)
        self.assertIn("instance-create-reqv1", features)
        self.assertEqual((info["name"], info["master"]),
                         ("cluster.vcluster.test", "node1.vcluster.test"))
        self.assertEqual(info["vg_name"], info["volume_group_name"])
        self.assertEqual(info_ca, info)
        (verified,) = self.rapi(call("GetVersion"), cafile=self.rapi_pem)
        self.assertEqual(verified, 2)

    def test_cluster_tags_modify_redistribute(self):
        add, = self.rapi(call("AddClusterTags", ["rapi-a", "rapi-b"], reason="test"))
        self.assertIsInstance(add, int)
        status, tags, delete = self.rapi(call("wait_job", add), call("GetClusterTags"),
                                         call("DeleteClusterTags", ["rapi-a"]))
        self.assertEqual(status, "success")
        self.assertTrue({"rapi-a", "rapi-b"} <= set(tags), tags)
        modify, redist = self.rapi(call("ModifyCluster", max_running_jobs=33),
                                   call("RedistributeConfig"))
        results = self.rapi(call("wait_job", delete), call("wait_job", modify),
                            call("wait_job", redist), call("GetClusterTags"), call("GetInfo"),
                            call("ModifyCluster", compression_tools=["gzip"]))
        self.assertEqual(results[:3], ["success"] * 3)
        self.assertNotIn("rapi-a", results[3])
        self.assertEqual(results[4]["max_running_jobs"], 33)
        self.assertApiError(results[5], 403)

    def test_jobs(self):
        with self.cluster.client() as luxi:
            blocker = luxi.call("SubmitJob", [delay(60)])
            self.addCleanup(self._kill, blocker)
            waiting = luxi.call("SubmitJob", [delay(0.01, depends=[[blocker, ["success"]]])])
            wait_for_status(luxi, blocker, {"running"})
        ids, bulk, status, change, cancel, again = self.rapi(
            call("GetJobs"), call("GetJobs", bulk=True), call("GetJobStatus", waiting),
            call("WaitForJobChange", blocker, ["status", "id"], None, None),
            call("CancelJob", waiting), call("CancelJob", waiting))
        self.assertIn(blocker, ids)
        self.assertTrue(all(isinstance(i, int) for i in ids), ids)
        self.assertEqual({j["id"] for j in bulk}, set(ids))
        self.assertTrue({"id", "ops", "status", "summary", "opstatus", "received_ts",
                         "start_ts", "end_ts"} <= set(bulk[0]))
        self.assertEqual((status["id"], status["summary"]), (waiting, ["TEST_DELAY(1.0e-2)"]))
        self.assertIn("oplog", status)
        self.assertEqual(change, {"job_info": ["running", blocker], "log_entries": []})
        self.assertEqual(cancel[0], True, cancel)
        self.assertEqual(again[0], False, again)
        (final,) = self.rapi(call("GetJobStatus", waiting))
        self.assertEqual(final["status"], "canceled")
        (missing,) = self.rapi(call("GetJobStatus", 999999))
        self.assertEqual(missing["id"], 999999)  # as Ganeti: the id, every other field null
        self.assertEqual({v for k, v in missing.items() if k != "id"}, {None})

    def _kill(self, job_id):
        with self.cluster.client() as luxi:
            if luxi.call("QueryJobs", [job_id], ["status"])[0][0] not in FINAL:
                luxi.call("CancelJob", job_id, True)

    def test_nodes(self):
        names, bulk, node, role = self.rapi(
            call("GetNodes"), call("GetNodes", bulk=True), call("GetNode", NODE2),
            call("GetNodeRole", NODE2))
        self.assertEqual(names, ["node1.vcluster.test", NODE2])
        self.assertEqual([n["name"] for n in bulk], names)
        for name in ("offline", "drained", "vm_capable", "ndparams", "group.uuid",
                     "sptotal", "spfree", "mtotal", "mnode", "mfree", "dtotal", "dfree",
                     "ctotal", "cnos", "tags"):
            self.assertIn(name, bulk[1])
        self.assertEqual(node["secondary_ip"], self.cluster.ips[1])
        self.assertEqual(role, "master-candidate")

        drain, = self.rapi(call("SetNodeRole", NODE2, "drained", auto_promote=True))
        status, drained, regular = self.rapi(call("wait_job", drain),
                                             call("GetNodeRole", NODE2),
                                             call("SetNodeRole", NODE2, "regular"))
        self.assertEqual((status, drained), ("success", "drained"))
        status, now, back = self.rapi(call("wait_job", regular), call("GetNodeRole", NODE2),
                                      call("SetNodeRole", NODE2, "master-candidate"))
        # as Ganeti's (checked on a real cluster): a node leaving "drained" promotes
        # itself while the candidate pool wants it
        self.assertEqual((status, now), ("success", "master-candidate"))
        modify, tags = self.rapi(call("ModifyNode", NODE2, ndparams={"spindle_count": 2}),
                                 call("AddNodeTags", NODE2, ["rack-1"]))
        results = self.rapi(call("wait_job", back), call("wait_job", modify),
                            call("wait_job", tags), call("GetNode", NODE2),
                            call("GetNodeTags", NODE2), call("GetNodeRole", NODE2),
                            call("SetNodeRole", NODE2, "master"), call("GetNode", "nope"))
        self.assertEqual(results[:3], ["success"] * 3)
        self.assertEqual(results[3]["ndparams"]["spindle_count"], 2)
        self.assertEqual(results[4], ["rack-1"])
        self.assertEqual(results[5], "master-candidate")
        self.assertApiError(results[6], 400)
        self.assertApiError(results[7], 404)
        # as Ganeti's RAPI (checked on a real cluster): a bare 404
        self.assertIn("Nothing matches the given URI", results[7]["error"]["message"])

    def test_groups(self):
        create, = self.rapi(call("CreateGroup", "rack2", alloc_policy="last_resort"))
        results = self.rapi(call("wait_job", create), call("GetGroups"),
                            call("GetGroups", bulk=True), call("GetGroup", "rack2"),
                            call("ModifyGroup", "rack2", alloc_policy="preferred",
                                 custom_ndparams={"ssh_port": 2222}),
                            call("AddGroupTags", "rack2", ["blue"]))
        self.assertEqual(results[0], "success")
        self.assertEqual(results[1], ["default", "rack2"])
        self.assertEqual({g["name"] for g in results[2]}, {"default", "rack2"})
        self.assertEqual(results[3]["alloc_policy"], "last_resort")
        modify, tags = results[4:6]
        rename_status, tag_status, group, group_tags, rename = self.rapi(
            call("wait_job", modify), call("wait_job", tags), call("GetGroup", "rack2"),
            call("GetGroupTags", "rack2"), call("RenameGroup", "rack2", "rack3"))
        self.assertEqual((rename_status, tag_status), ("success", "success"))
        self.assertEqual((group["alloc_policy"], group["custom_ndparams"]),
                         ("preferred", {"ssh_port": 2222}))
        self.assertEqual(group_tags, ["blue"])
        status, assign = self.rapi(call("wait_job", rename),
                                   call("AssignGroupNodes", "rack3", [NODE2], force=True))
        self.assertEqual(status, "success")
        status, moved, back = self.rapi(
            call("wait_job", assign), call("GetGroup", "rack3"),
            call("AssignGroupNodes", "default", [NODE2], force=True))
        self.assertEqual((status, moved["node_list"]), ("success", [NODE2]))
        status, delete = self.rapi(call("wait_job", back), call("DeleteGroup", "rack3"))
        self.assertEqual(status, "success")
        status, groups, gone = self.rapi(call("wait_job", delete), call("GetGroups"),
                                         call("GetGroup", "rack3"))
        self.assertEqual((status, groups), ("success", ["default"]))
        self.assertApiError(gone, 404)

    def test_get_put_symmetry_as_ganetis_qa(self):
        """Ganeti's QA ``qa_rapi._DoGetPutTests`` (issue 34): every parameter GET /2/info,
        /2/nodes/NAME and /2/groups/NAME answer (read with a ``{}`` body, as the QA's
        client sends) that the modify opcode takes is sent back unchanged; the jobs end
        as on a real Ganeti 3.0 cluster (checked side by side)."""
        params = ganeti_opcode_params()
        cluster = self.get_put(
            "/2/info", "/2/modify", params["OpClusterSetParams"],
            exceptions=["force", "add_uids", "remove_uids", "osparams_private_cluster",
                        "hv_state", "disk_state", "modify_etc_hosts"],
            set_exceptions=["nicparams", "compression_tools"])
        node = self.get_put(
            f"/2/nodes/{NODE2}", f"/2/nodes/{NODE2}/modify", params["OpNodeSetParams"],
            method="POST", exceptions=["force", "powered", "node_name", "node_uuid",
                                       "hv_state", "disk_state", "auto_promote"])
        group = self.get_put(
            "/2/groups/default", "/2/groups/default/modify", params["OpGroupSetParams"],
            aliases=["custom_ndparams", "custom_ipolicy", "custom_diskparams"],
            exceptions=["group_name", "hv_state", "disk_state"],
            set_exceptions=["ndparams", "ipolicy", "diskparams"])
        # Ganeti's own LUs refuse some values they answer (real Ganeti 3.0 the same):
        # the empty install image, three node states at once
        self.assertEqual(cluster, ["error", [["OpPrereqError", [
            "Install image must be an absolute path or a URL"]]]])
        self.assertEqual(node, ["error", [["OpPrereqError", [
            "Can't set the node into more than one state at the same time", "wrong_input"]]]])
        self.assertEqual(group, ["success", [[]]])
        # without those, the values go back as they came (every hypervisor's
        # parameters are listed; those of the enabled one are sent back)
        self.assertEqual(self.get_put(
            "/2/info", "/2/modify", params["OpClusterSetParams"],
            exceptions=["force", "add_uids", "remove_uids", "osparams_private_cluster",
                        "hv_state", "disk_state", "modify_etc_hosts", "install_image",
                        "zeroing_image", "beparams", "hvparams"],
            set_exceptions=["nicparams", "compression_tools"]), ["success", [None]])
        self.assertEqual(self.get_put(
            f"/2/nodes/{NODE2}", f"/2/nodes/{NODE2}/modify", params["OpNodeSetParams"],
            method="POST", exceptions=["force", "powered", "node_name", "node_uuid",
                                       "hv_state", "disk_state", "auto_promote",
                                       "master_capable", "vm_capable", "ndparams"])[0],
            "success")

    def get_put(self, get_uri, modify_uri, opcode_params, aliases=(), method="PUT",
                exceptions=(), set_exceptions=()):
        """The QA's steps; the job's status and opresult (a refusal at submission fails)."""
        (info,) = self.rapi(call("_SendRequest", "GET", get_uri, None, {}))
        interest = list(opcode_params) + list(aliases)
        missing = [p for p in interest if p not in info and p not in exceptions]
        self.assertEqual(missing, [], f"not answered by {get_uri}")
        payload = {p: info[p] for p in interest
                   if p not in exceptions and p not in set_exceptions}
        (job,) = self.rapi(call("_SendRequest", method, modify_uri, None, payload))
        self.assertIsInstance(job, int, job)
        status, result = self.rapi(call("wait_job", job), call("GetJobStatus", job))
        return [status, result["opresult"]]

    def test_query(self):
        nodes, filtered, fields, jobs = self.rapi(
            call("Query", "node", ["name", "role"]),
            call("Query", "node", ["name"], qfilter=["=", "name", NODE2]),
            call("QueryFields", "group", ["name", "node_cnt"]),
            call("Query", "job", ["id", "status"]))
        self.assertEqual([f["name"] for f in nodes["fields"]], ["name", "role"])
        self.assertEqual(nodes["data"][0], [[0, "node1.vcluster.test"], [0, "M"]])
        self.assertEqual(filtered["data"], [[[0, NODE2]]])
        self.assertEqual([f["name"] for f in fields["fields"]], ["name", "node_cnt"])
        self.assertEqual([f["name"] for f in jobs["fields"]], ["id", "status"])
        (instances, exports) = self.rapi(call("Query", "instance", ["name"]),
                                         call("Query", "export", ["node", "export"]))
        self.assertEqual((instances["fields"][0]["name"], instances["data"]), ("name", []))
        self.assertEqual(([f["name"] for f in exports["fields"]], exports["data"]),
                         (["node", "export"], []))

    def test_authentication(self):
        anonymous_read, anonymous_write = self.rapi(
            call("GetNodes"), call("AddClusterTags", ["x"]), user=None)
        self.assertEqual(len(anonymous_read), 2)
        self.assertApiError(anonymous_write, 401)
        (wrong,) = self.rapi(call("GetInfo"), user=self.user, password="wrong")
        self.assertApiError(wrong, 401)

    def test_htools(self):
        if not os.path.exists(os.path.join(HTOOLS, "hbal")):
            self.skipTest("Debian's ganeti-htools-3.0 is not installed "
                          "(make install-compat installs it)")
        url = f"https://{self.host}:5080"
        info = run([os.path.join(HTOOLS, "hinfo"), "-m", url, "-p"], timeout=120)
        self.assertIn("Loaded 2 nodes, 0 instances, 1 node group", info.stdout)
        # -p prints the node table (names without the common domain)
        table = info.stdout + info.stderr
        self.assertRegex(table, r"(?m)^\s+node1\s+\d+")
        self.assertRegex(table, r"(?m)^\s+node2\s+\d+")
        balance = run([os.path.join(HTOOLS, "hbal"), "-m", url], timeout=120)
        self.assertIn("Cluster is empty", balance.stdout + balance.stderr)
        space = run([os.path.join(HTOOLS, "hspace"), "-m", url], timeout=120)
        self.assertIn("The cluster has 2 nodes", space.stdout)

"""The dashboard's instances table in headless Chromium, on a real two-node virtual cluster.

ganeti-rapi runs with ``--require-authentication``, and each browser opens the
page with a user's credentials: the cluster's RAPI user (write access) or a
read-only user added to the users file.  Instances are created and started
over LUXI, by "someone else": the page must show them through the WebSocket
feed alone, never reloaded.  A MutationObserver injected into the page records
every status an instance row shows and every job its buttons waited for, so
that short states are not missed between two polls of the test.  Waiting is
WebDriverWait on page conditions (with a deadline), never a sleep.

Skipped, saying what is missing, without Debian's chromium, chromium-driver
and selenium (as tests/integration/test_dashboard.py).
"""

from __future__ import annotations

import base64
import tempfile
import urllib.parse
import uuid

from tests.integration import test_dashboard as dashboard
from tests.integration.clustercase import ClusterCase
from tests.integration.jobtools import wait_for_job
from tests.integration.test_dashboard import (
    JOB_TIMEOUT,
    RapiDaemon,
    browser_unavailable,
    start_browser,
)

READER = ("viewer", "viewer-secret")

# Records, per instance row, every status it shows, and every job shown in its
# actions cell together with whether its buttons were disabled then.
RECORDER = """
const rec = window.__instRecord = {statuses: {}, jobs: {}};
const body = document.getElementById("instances-body");
function look() {
  for (const row of body.querySelectorAll("tr.instance-row")) {
    const name = row.dataset.instanceName;
    const badge = row.querySelector(".instance-status");
    const status = badge ? badge.dataset.status : undefined;
    const seen = rec.statuses[name] || (rec.statuses[name] = []);
    if (status && seen[seen.length - 1] !== status) {
      seen.push(status);
    }
    const link = row.querySelector(".instance-job a");
    if (link) {
      const buttons = [...row.querySelectorAll("button.instance-action")];
      const jobs = rec.jobs[name] || (rec.jobs[name] = []);
      const entry = [link.dataset.jobId, link.getAttribute("href"),
                     buttons.length > 0 && buttons.every((b) => b.disabled)];
      const last = jobs[jobs.length - 1];
      if (!last || last.join() !== entry.join()) {
        jobs.push(entry);
      }
    }
  }
}
new MutationObserver(look).observe(body, {subtree: true, childList: true, attributes: true,
                                          characterData: true});
look();
"""

# The formatting helpers of the instances table (format.js), run in the page.
FORMAT_SCRIPT = """
const done = arguments[arguments.length - 1];
import(new URL("format.js", document.baseURI).href).then((f) => {
  done({
    kinds: ["running", "ADMIN_down", "ADMIN_offline", "USER_down", "ERROR_up", "ERROR_down",
            "ERROR_wrongnode", "ERROR_nodedown", "ERROR_nodeoffline", "", null]
      .map(f.instanceStatusKind),
    memory: [
      f.instanceMemoryText({beparams: {maxmem: 128}, oper_state: true, oper_ram: 96}),
      f.instanceMemoryText({beparams: {maxmem: 2048}, oper_state: false, oper_ram: null}),
      f.instanceMemoryText({beparams: {maxmem: 512}, oper_state: null, oper_ram: null}),
      f.instanceMemoryText({beparams: {}}),
    ],
    disks: [f.instanceDisksText([], "diskless"), f.instanceDisksText([1024], "plain"),
            f.instanceDisksText([512, 1536], "file"), f.instanceDisksText(null, "drbd")],
    ips: [f.instanceIpsText(["192.0.2.10", null, "192.0.2.11"]), f.instanceIpsText([null]),
          f.instanceIpsText(undefined)],
    touches: [
      f.touchesInstances(["OP_INSTANCE_STARTUP"], ["INSTANCE_STARTUP(web1)"]),
      f.touchesInstances(["OP_TEST_DELAY", "OP_INSTANCE_REMOVE"], []),
      f.touchesInstances(["OP_QUERY"], ["QUERY(instance)"]),
      f.touchesInstances(["OP_QUERY"], ["QUERY(node)"]),
      f.touchesInstances(["OP_TAGS_SET"], ["TAGS_SET"]),
      f.touchesInstances(["OP_NODE_EVACUATE"], []),
      f.touchesInstances(["OP_TEST_DELAY"], ["TEST_DELAY(1.0)"]),
      f.touchesInstances(undefined, undefined),
    ],
    errors: [
      f.jobErrorText(["error"], [["OpPrereqError", ["Instance 'x' is marked to be offline",
                                                   "wrong_state"]]]),
      f.jobErrorText(["success", "error"], [null, ["OpExecError", ["Could not start"]]]),
      f.jobErrorText(["error"], [null]),
    ],
  });
}, (err) => done({error: String(err)}));
"""


def create_op(name, node, **extra):
    """OP_INSTANCE_CREATE of a diskless, not installed instance on the fake hypervisor."""
    op = {"OP_ID": "OP_INSTANCE_CREATE", "instance_name": name, "mode": "create",
          "disk_template": "diskless", "disks": [], "nics": [{}], "pnode": node,
          "os_type": "busybox", "no_install": True, "start": False, "name_check": False,
          "ip_check": False, "beparams": {"maxmem": 128, "minmem": 128}}
    op.update(extra)
    return op


class DashboardInstancesTest(ClusterCase):
    """The instances table of one page per user, on a cluster that requires authentication."""

    PREFIX = "ganeti-dash-inst-vc-"
    NODES = 2
    REQUIRES = (browser_unavailable,)
    rapi: RapiDaemon | None = None

    @classmethod
    def setUpCluster(cls):
        # each test quits its browsers itself (cleanups); the cluster's destruction
        # stops ganeti-rapi too
        cls.tmp = cls.cluster.tmp
        cls.rapi = RapiDaemon(cls.cluster)
        with open(cls.rapi.paths.rapi_users, "a", encoding="utf-8") as f:
            f.write(f"{READER[0]} {READER[1]} read\n")
        cls.rapi.restart("--require-authentication")
        cls.writer = cls.cluster.rapi_credentials()

    def setUp(self):
        self.luxi = self.cluster.client()
        self.addCleanup(self.luxi.close)

    # --- helpers -----------------------------------------------------------------

    def browser(self, user, password):
        """A browser of its own (its own credentials cache) showing the dashboard as
        ``user`` (None: anonymously)."""
        profile = tempfile.mkdtemp(prefix="profile-", dir=self.tmp)
        self.driver = start_browser(profile, profile + ".log")
        self.addCleanup(self.driver.quit)
        quote = urllib.parse.quote
        login = "" if user is None else f"{quote(user, safe='')}:{quote(password, safe='')}@"
        self.driver.get(f"https://{login}{self.rapi.ip}:{self.rapi.port}/dashboard/")
        user = "anonymous" if user is None else user
        self.marker = uuid.uuid4().hex
        self.js("window.__dashMarker = arguments[0];", self.marker)
        self.js(RECORDER)
        self.wait(lambda d: self.text("#user-name") == user, f"the user {user}")
        self.wait(lambda d: "Loading" not in self.text("#instances-body"), "the instances")
        self.wait(lambda d: self.js("return document.getElementById('feed-state')"
                                    ".dataset.state") == "live", "the feed as live")

    # waiting on the page, running scripts in it (as the other dashboard tests do)
    wait = dashboard.DashboardTest.wait
    js = dashboard.DashboardTest.js
    text = dashboard.DashboardTest.text

    def diagnostics(self):
        """The other dashboard tests' diagnostics, and the instances table with its record."""
        try:
            table = self.js("return document.getElementById('instances-body').innerText + "
                            "'\\n' + JSON.stringify(window.__instRecord)")
        except Exception as err:  # the browser itself may be the problem
            table = f"(page unreadable: {err})"
        return f"{dashboard.DashboardTest.diagnostics(self)}\n--- instances ---\n{table}"

    def rows(self):
        """The table: [name, status, primary node, OS, memory, disks, IPs] per row."""
        return self.js("""return [...document.querySelectorAll('#instances-body tr.instance-row')]
            .map((r) => [r.dataset.instanceName, r.querySelector('.instance-status').dataset.status,
                         ...['.instance-pnode', '.instance-os', '.instance-memory',
                             '.instance-disks', '.instance-ips']
                           .map((s) => r.querySelector(s).textContent)]);""")

    def status(self, name):
        return self.js("const b = document.querySelector("
                       "`tr[data-instance-name=\"${arguments[0]}\"] .instance-status`);"
                       "return b ? b.dataset.status : null;", name)

    def buttons(self, name):
        """The action buttons of a row: [label, aria-label, disabled]."""
        return self.js("return [...document.querySelectorAll("
                       "`tr[data-instance-name=\"${arguments[0]}\"] button.instance-action`)]"
                       ".map((b) => [b.textContent, b.getAttribute('aria-label'), b.disabled]);",
                       name)

    def run_job(self, *ops):
        job_id = self.luxi.call("SubmitJob", list(ops))
        self.assertEqual(wait_for_job(self.luxi, job_id, timeout=JOB_TIMEOUT), "success",
                         self.luxi.call("QueryJobs", [job_id], ["opresult"]))
        return job_id

    def create(self, name, node):
        self.run_job(create_op(name, node))
        self.addCleanup(self._remove, name)

    def _remove(self, name):
        with self.cluster.client() as c:
            if c.call("QueryInstances", [], ["name"], False).count([name]):
                job_id = c.call("SubmitJob", [{"OP_ID": "OP_INSTANCE_REMOVE",
                                               "instance_name": name,
                                               "shutdown_timeout": 0}])
                wait_for_job(c, job_id, timeout=JOB_TIMEOUT)

    def not_reloaded(self):
        self.assertEqual(self.js("return window.__dashMarker;"), self.marker,
                         "the page was reloaded")

    # --- tests -------------------------------------------------------------------

    def test_writer_sees_instances_live_and_stops_one(self):
        self.browser(*self.writer)
        self.assertEqual(self.text("#user-access"), "(may start and stop instances)")
        self.assertFalse(self.js("return document.getElementById('sign-in').hidden === false"))
        self.assertEqual(self.text("#instances-body"), "No instances.")
        node1, node2 = self.cluster.nodes
        # created over LUXI: the rows come through the feed, sorted by name
        self.create("web2.vcluster.test", node2)
        self.create("web1.vcluster.test", node1)
        self.wait(lambda d: len(self.rows()) == 2, "both instances")
        self.assertEqual(self.rows(), [
            ["web1.vcluster.test", "ADMIN_down", node1, "busybox", "128 MiB", "diskless", "—"],
            ["web2.vcluster.test", "ADMIN_down", node2, "busybox", "128 MiB", "diskless", "—"],
        ])
        self.assertEqual(self.text("#instances-count"), "2 instances")
        self.assertNotEqual(self.text("#instances-updated"), "never")
        self.assertFalse(self.js("return document.getElementById('instances-actions-heading')"
                                 ".hidden"))
        self.assertEqual(self.buttons("web1.vcluster.test"), [
            ["Start", "Start instance web1.vcluster.test", False],
            ["Stop", "Stop instance web1.vcluster.test", False],
            ["Reboot", "Reboot instance web1.vcluster.test", False]])
        # started by someone else: the row shows it running, without a reload
        self.run_job({"OP_ID": "OP_INSTANCE_STARTUP", "instance_name": "web1.vcluster.test"})
        self.wait(lambda d: self.status("web1.vcluster.test") == "running", "web1 running")
        self.assertEqual(self.js("return document.querySelector('tr[data-instance-name="
                                 "\"web1.vcluster.test\"]').dataset.kind"), "running")
        self.wait(lambda d: "using" in self.rows()[0][4], "web1's memory in use")
        self.assertEqual(self.rows()[0][4], "128 MiB (using 128 MiB)")
        self.not_reloaded()
        # the Stop button: a job, shown on the row (its buttons disabled) until it ends
        self.driver.find_element(
            "css selector", 'button[aria-label="Stop instance web1.vcluster.test"]').click()
        self.wait(lambda d: self.status("web1.vcluster.test") == "ADMIN_down", "web1 stopped",
                  JOB_TIMEOUT)
        self.wait(lambda d: not any(b[2] for b in self.buttons("web1.vcluster.test")),
                  "web1's buttons enabled again")
        jobs = self.js("return window.__instRecord.jobs['web1.vcluster.test'] || [];")
        self.assertTrue(jobs, "no job was shown on web1's row")
        job_id = jobs[0][0]
        self.assertEqual(jobs[0][1:], [f"#job-{job_id}", True], jobs)
        (row,) = self.luxi.call("QueryJobs", [int(job_id)], ["status", "summary"])
        self.assertEqual(row, ["success", ["INSTANCE_SHUTDOWN(web1.vcluster.test)"]])
        # the link points at the job's row in the jobs table
        self.wait(lambda d: self.js("return document.getElementById(arguments[0]) !== null",
                                    f"job-{job_id}"), f"job {job_id} in the jobs table")
        statuses = self.js("return window.__instRecord.statuses;")
        self.assertEqual(statuses["web1.vcluster.test"], ["ADMIN_down", "running", "ADMIN_down"])
        self.assertEqual(statuses["web2.vcluster.test"], ["ADMIN_down"])
        self.assertIsNone(self.text('#messages [data-key="instance-web1.vcluster.test"]'))
        self.not_reloaded()

    def test_a_failed_action_shows_ganetis_error(self):
        self.browser(*self.writer)
        self.create("down1.vcluster.test", self.cluster.nodes[0])
        self.run_job({"OP_ID": "OP_INSTANCE_SET_PARAMS", "instance_name": "down1.vcluster.test",
                      "offline": True})
        self.wait(lambda d: self.status("down1.vcluster.test") == "ADMIN_offline",
                  "down1 offline")
        self.driver.find_element(
            "css selector", 'button[aria-label="Start instance down1.vcluster.test"]').click()
        key = '#messages [data-key="instance-down1.vcluster.test"]'
        self.wait(lambda d: self.text(key), "the error of the start", JOB_TIMEOUT)
        message = self.text(key)
        self.assertRegex(message, r"^Start down1\.vcluster\.test \(job \d+\): OpPrereqError: ")
        self.assertIn("offline", message)
        self.assertTrue(message.endswith("(wrong_state)"), message)
        self.wait(lambda d: not any(b[2] for b in self.buttons("down1.vcluster.test")),
                  "down1's buttons enabled again")
        self.assertEqual(self.status("down1.vcluster.test"), "ADMIN_offline")

    def test_read_only_user_sees_no_buttons(self):
        self.create("ro1.vcluster.test", self.cluster.nodes[1])
        self.browser(*READER)
        self.assertEqual(self.text("#user-access"), "(read only)")
        self.wait(lambda d: [r[0] for r in self.rows()] == ["ro1.vcluster.test"], "ro1")
        self.assertEqual(self.rows()[0][1], "ADMIN_down")
        self.assertEqual(self.js("return document.querySelectorAll("
                                 "'#instances-table button.instance-action').length"), 0)
        self.assertTrue(self.js("return document.getElementById('instances-actions-heading')"
                                ".hidden"))
        self.assertEqual(self.js("return document.querySelector('#instances-body tr')"
                                 ".children.length"), 7)
        # the read-only user still sees the table kept live
        self.run_job({"OP_ID": "OP_INSTANCE_STARTUP", "instance_name": "ro1.vcluster.test"})
        self.wait(lambda d: self.status("ro1.vcluster.test") == "running", "ro1 running")
        self.not_reloaded()

    def test_anonymous_reader_signs_in_for_the_buttons(self):
        self.addCleanup(self.rapi.restart, "--require-authentication")
        self.rapi.restart()  # anonymous reads allowed
        self.create("anon1.vcluster.test", self.cluster.nodes[0])
        self.browser(None, None)
        self.wait(lambda d: [r[0] for r in self.rows()] == ["anon1.vcluster.test"], "anon1")
        self.assertEqual(self.text("#user-access"), "(read only)")
        self.assertEqual(self.buttons("anon1.vcluster.test"), [])
        sign_in = self.driver.find_element("id", "sign-in")
        self.assertTrue(sign_in.is_displayed())
        # the browser asks for credentials (GET /dashboard/access?login=1 answers 401);
        # here they are given the way DevTools can: a header on every request
        token = base64.b64encode(":".join(self.writer).encode()).decode()
        self.driver.execute_cdp_cmd("Network.enable", {})
        self.driver.execute_cdp_cmd("Network.setExtraHTTPHeaders",
                                    {"headers": {"Authorization": f"Basic {token}"}})
        sign_in.click()
        self.wait(lambda d: self.text("#user-name") == self.writer[0], "the signed-in user")
        self.assertEqual(self.text("#user-access"), "(may start and stop instances)")
        self.assertFalse(sign_in.is_displayed())
        self.assertEqual([b[0] for b in self.buttons("anon1.vcluster.test")],
                         ["Start", "Stop", "Reboot"])
        self.not_reloaded()

    def test_formatting_helpers(self):
        self.browser(*READER)
        out = self.driver.execute_async_script(FORMAT_SCRIPT)
        self.assertEqual(out, {
            "kinds": ["running", "down", "offline", "user-down", "error", "error", "error",
                      "error", "error", "unknown", "unknown"],
            "memory": ["128 MiB (using 96 MiB)", "2.0 GiB", "512 MiB", "?"],
            "disks": ["diskless", "1 disk: 1.0 GiB (plain)", "2 disks: 512 MiB, 1.5 GiB (file)",
                      "no disks (drbd)"],
            "ips": ["192.0.2.10, 192.0.2.11", "—", "—"],
            "touches": [True, True, True, False, True, True, False, False],
            "errors": ["OpPrereqError: Instance 'x' is marked to be offline (wrong_state)",
                       "OpExecError: Could not start",
                       "the job failed (no error text)"],
        })

"""Reservations (forthcoming instances) on the dashboard, in headless Chromium, on a real
two-node virtual cluster: a reservation made over LUXI appears in the instances table
with a "reserved" badge and no actions (Ganeti's bulk list shows it as ADMIN_down; the
page tells it apart by the query field "forthcoming"), and the node it is reserved on
shows what it holds (memory, disk) as reserved; committing it turns the row into an
ordinary stopped instance and the node's reservation goes.  The pure helpers of
format.js are checked in the page too.

Skipped, saying what is missing, without Debian's chromium, chromium-driver and
selenium (as tests/integration/test_dashboard.py).
"""

from __future__ import annotations

import base64

from tests.integration import test_dashboard as dashboard
from tests.integration.jobtools import wait_for_job
from tests.integration.test_dashboard import (
    JOB_TIMEOUT,
)

# The reservation helpers of format.js, run in the page.
FORMAT_SCRIPT = """
const done = arguments[arguments.length - 1];
import(new URL("format.js", document.baseURI).href).then((f) => {
  const answer = {fields: [{name: "name"}, {name: "forthcoming"}],
                  data: [[[0, "a"], [0, true]], [[0, "b"], [0, false]], [[0, "c"], [0, true]],
                         [[2, null], [2, null]]]};
  const reserved = f.forthcomingNames(answer);
  const byNode = f.reservedByNode([
    {name: "a", pnode: "n1", snodes: ["n2"], beparams: {maxmem: 512}, "disk.sizes": [1024, 1024]},
    {name: "b", pnode: "n1", snodes: [], beparams: {maxmem: 4096}, "disk.sizes": [10240]},
    {name: "c", pnode: "n1", snodes: [], beparams: {maxmem: 128}, "disk.sizes": []},
  ], reserved);
  done({
    names: [...reserved].sort(),
    none: [f.forthcomingNames(null).size, f.forthcomingNames({fields: [{name: "name"}],
                                                              data: [[[0, "a"]]]}).size],
    byNode: Object.fromEntries(byNode),
    texts: [f.reservedText(byNode.get("n1")), f.reservedText(byNode.get("n2")),
            f.reservedText({count: 1, memory: 0, disk: 0}), f.reservedText(undefined)],
    kinds: [f.instanceStatusKind("ADMIN_down", true), f.instanceStatusKind("ADMIN_down"),
            f.instanceStatusKind("running", false)],
  });
}, (err) => done({error: String(err)}));
"""


class DashboardReservationsTest(dashboard.DashboardCase):
    """Reservations on the dashboard, signed in as the cluster's RAPI user."""

    PREFIX = "ganeti-dash-res-vc-"

    def setUp(self):
        self.luxi = self.cluster.client()
        self.addCleanup(self.luxi.close)
        # signed in as the cluster's RAPI user, who may act on instances and read
        # /2/query (an anonymous reader cannot: reservations look like stopped instances
        # to him); the credentials go the way DevTools can give them, as a header
        user, password = self.cluster.rapi_credentials()
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        self.driver.execute_cdp_cmd("Network.enable", {})
        self.driver.execute_cdp_cmd("Network.setExtraHTTPHeaders",
                                    {"headers": {"Authorization": f"Basic {token}"}})
        self.open_dashboard()
        if self.text("#user-name") != user:
            self.wait(lambda d: d.find_element("id", "sign-in").is_displayed(), "Sign in")
            self.driver.find_element("id", "sign-in").click()
        self.wait(lambda d: self.text("#user-name") == user, f"the user {user}")

    def run_job(self, op):
        job_id = self.luxi.call("SubmitJob", [op])
        self.assertEqual(wait_for_job(self.luxi, job_id, timeout=JOB_TIMEOUT), "success",
                         self.luxi.call("QueryJobs", [job_id], ["opresult"]))
        return self.luxi.call("QueryJobs", [job_id], ["opresult"])[0][0][0]

    def row(self, name):
        """[badge text, badge kind, data-status, actions text] of an instance row."""
        return self.js("""const r = document.querySelector(
                `#instances-body tr[data-instance-name="${arguments[0]}"]`);
            if (!r) { return null; }
            const b = r.querySelector('.instance-status');
            const a = r.querySelector('.instance-actions');
            return [b.textContent, b.dataset.kind, b.dataset.status, a ? a.textContent : null,
                    r.querySelectorAll('button.instance-action').length];""", name)

    def node_reserved(self, node):
        """The reserved texts of a node row: [flags, memory cell note, disk cell note]."""
        return self.js("""const r = document.querySelector(
                `#nodes-body tr[data-node-name="${arguments[0]}"]`);
            if (!r) { return null; }
            const flag = r.querySelector('.flag-reserved');
            return [flag ? flag.textContent : null,
                    ...[...r.querySelectorAll('td.usage')].map((td) => {
                      const s = td.querySelector('.usage-reserved');
                      return s ? s.textContent : null; })];""", node)

    def test_a_reservation_is_shown_as_reserved_and_counted_on_its_node(self):
        node = self.cluster.nodes[1]
        result = self.run_job({
            "OP_ID": "OP_INSTANCE_CREATE", "forthcoming": True, "instance_name":
            "held.vcluster.test", "disk_template": "diskless", "pnode": node,
            "os_type": "busybox", "beparams": {"maxmem": 384, "minmem": 384}})
        self.assertEqual(result["nodes"], [node])
        self.wait(lambda d: self.row("held.vcluster.test") is not None, "the reservation")
        self.assertEqual(self.row("held.vcluster.test"),
                         ["reserved", "reserved", "ADMIN_down",
                          "reservation (commit it to create it)", 0])
        self.wait(lambda d: (self.node_reserved(node) or [None])[0] is not None,
                  "the node's reservation")
        self.assertEqual(self.node_reserved(node),
                         ["1 reserved: 384 MiB memory", "+384 MiB reserved", None])
        self.assertEqual(self.node_reserved(self.cluster.nodes[0]), [None, None, None])
        self.assertIn("(1 reserved)", self.text("#instances-count"))

        self.run_job({"OP_ID": "OP_INSTANCE_CREATE", "commit": True,
                      "instance_name": "held.vcluster.test", "no_install": True,
                      "name_check": False, "ip_check": False})
        self.wait(lambda d: (self.row("held.vcluster.test") or [None])[0] == "ADMIN_down",
                  "the committed instance as ADMIN_down", JOB_TIMEOUT)
        self.assertEqual(self.row("held.vcluster.test")[:3],
                         ["ADMIN_down", "down", "ADMIN_down"])
        self.assertEqual(self.row("held.vcluster.test")[4], 3)  # Start, Stop, Reboot
        self.wait(lambda d: self.node_reserved(node) == [None, None, None],
                  "the node without reservations")

    def test_format_helpers(self):
        out = self.driver.execute_async_script(FORMAT_SCRIPT)
        self.assertEqual(out, {
            "names": ["a", "c"],
            "none": [0, 0],
            "byNode": {"n1": {"count": 2, "memory": 640, "disk": 2048},
                       "n2": {"count": 1, "memory": 0, "disk": 2048}},
            "texts": ["2 reserved: 640 MiB memory, 2.0 GiB disk", "1 reserved: 2.0 GiB disk",
                      "1 reserved", ""],
            "kinds": ["reserved", "down", "running"],
        })

"""The dashboard of ganeti-rapi in headless Chromium, on a real two-node virtual cluster.

The page is loaded once per test and never reloaded: jobs submitted over LUXI
must appear, change status and show their log lines through the WebSocket
feed alone.  A MutationObserver injected into the page records every status a
job row shows and every growth of its log, so that fast transitions are not
missed between two polls of the test.  Waiting is WebDriverWait on page
conditions (with a deadline), never a sleep.

Needs Debian's chromium and chromium-driver and selenium (``make test``
installs them through ``make install-browser`` and the ``test`` extra); the
tests are skipped, saying what is missing, without them.
"""

from __future__ import annotations

import os
import urllib.parse
import uuid

from ganeti.cli import daemons
from ganeti.core import constants
from ganeti.core.paths import Paths
from tests.integration.clustercase import ClusterCase, VirtualCluster
from tests.integration.jobtools import delay, wait_for_job

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync",
                  # rapi.pem is self-signed, made by cluster init
                  "--ignore-certificate-errors", "--window-size=1280,900"]
#: Seconds for the page to show something the cluster already has.
PAGE_TIMEOUT = 20.0
#: Seconds for a short job to run and be shown as finished.
JOB_TIMEOUT = 30.0
#: Seconds for the page to be live on the feed again after ganeti-rapi restarts.
RECONNECT_TIMEOUT = 30.0
STARTED = frozenset({"queued", "waiting", "running"})

# Records, per job row, every status it shows, every size of its log (with the
# status at that moment) and every wait reason it shows (with the status), and
# every state of the feed indicator.  Mutation
# observers run after each batch of DOM changes, so nothing the page showed is
# missed, however briefly.
RECORDER = """
const rec = window.__dashRecord = {statuses: {}, logs: {}, reasons: {}, feed: []};
const jobs = document.getElementById("jobs-body");
const feed = document.getElementById("feed-state");
function look() {
  for (const row of jobs.querySelectorAll("tr.job-row")) {
    const id = row.dataset.jobId;
    const badge = row.querySelector(".job-status");
    const status = badge ? badge.dataset.status : undefined;
    const seen = rec.statuses[id] || (rec.statuses[id] = []);
    if (status && seen[seen.length - 1] !== status) {
      seen.push(status);
    }
    const logRow = jobs.querySelector(`tr[data-log-for="${id}"]`);
    const lines = logRow ? logRow.querySelectorAll(".job-log li").length : 0;
    const sizes = rec.logs[id] || (rec.logs[id] = []);
    if (lines && (!sizes.length || sizes[sizes.length - 1][0] !== lines)) {
      sizes.push([lines, status]);
    }
    const wait = row.querySelector(".job-wait");
    const reason = wait && !wait.hidden ? wait.title : "";
    const reasons = rec.reasons[id] || (rec.reasons[id] = []);
    const last = reasons[reasons.length - 1];
    if (!last || last[0] !== status || last[1] !== reason) {
      reasons.push([status, reason]);
    }
  }
  const state = feed.dataset.state;
  if (rec.feed[rec.feed.length - 1] !== state) {
    rec.feed.push(state);
  }
}
const observer = new MutationObserver(look);
observer.observe(jobs, {subtree: true, childList: true, attributes: true, characterData: true});
observer.observe(feed, {attributes: true});
look();
"""


# Drives the page's own job-list model (jobstate.js) through the races between a
# GET /2/jobs snapshot and feed events, and through replays after a reconnection.
JOB_STORE_SCRIPT = """
const done = arguments[arguments.length - 1];
import(new URL("jobstate.js", document.baseURI).href).then(({JobStore}) => {
  const entry = (serial, text) => [serial, [1700000000, 0], "message", text];
  const s = new JobStore();
  const out = {};
  const first = s.beginSnapshot();
  // events arrive while the snapshot is on its way: the feed is newer
  s.applyJobEvent({type: "job", serial: 10, id: 1, status: "running", log: [entry(1, "a")]});
  s.applyJobEvent({type: "job", serial: 11, id: 1, status: "running",
                   log: [entry(1, "a"), entry(2, "b")]});
  s.applyArchiveEvent({type: "archive", serial: 12, id: 3});
  out.applied = s.applySnapshot(first, [{id: 1, status: "queued"}, {id: 2, status: "success"},
                                        {id: 3, status: "success"}]);
  out.afterSnapshot = s.sorted().map((j) => [j.id, j.status]);
  out.log = s.logOf(1).map((e) => e[3]);
  // a replay after reconnecting repeats serials already applied
  out.replayed = s.applyJobEvent({type: "job", serial: 11, id: 1, status: "queued"});
  out.lastSerial = s.lastSerial;
  // an answer to an older request is dropped
  const second = s.beginSnapshot();
  out.stale = s.applySnapshot(first, []);
  // a job missing from a newer snapshot was archived meanwhile
  s.applySnapshot(second, [{id: 1, status: "success"}]);
  out.afterResync = s.sorted().map((j) => [j.id, j.status]);
  // GET /2/jobs/<id> oplog and feed log entries are merged by serial
  out.added = s.addOplog(1, [[entry(2, "b"), entry(3, "c")], []]);
  out.fullLog = s.logOf(1).map((e) => e[3]);
  done(out);
}, (err) => done({error: String(err)}));
"""


# The wait reasons in the job-list model (jobstate.js) and their formatting
# (format.js): feed events set and clear them; snapshots without the field
# keep them only while the job's status stays the same.
WAIT_REASON_SCRIPT = """
const done = arguments[arguments.length - 1];
Promise.all([import(new URL("jobstate.js", document.baseURI).href),
             import(new URL("format.js", document.baseURI).href)]).then(([js, fmt]) => {
  const uuid = "0c6e1f2a-8b1d-4f8e-9d55-3b5c0a0e2f41";
  const paused = `paused by filter rule ${uuid} (PAUSE, reason 'maintenance')`;
  const s = new js.JobStore();
  const out = {};
  out.set = s.applyJobEvent({type: "job", serial: 1, id: 5, status: "queued",
                             wait_reason: paused});
  out.same = s.applyJobEvent({type: "job", serial: 2, id: 5, status: "queued",
                              wait_reason: paused, log: []});
  out.shown = js.shownReason(s.jobs.get("5"));
  // a snapshot without the field keeps the reason while the status is the same
  s.applySnapshot(s.beginSnapshot(), [{id: 5, status: "queued"}, {id: 6, status: "queued"}]);
  out.kept = [js.shownReason(s.jobs.get("5")), js.shownReason(s.jobs.get("6"))];
  // ... and drops it when the status moved on (nothing vouches for it any more)
  s.applySnapshot(s.beginSnapshot(), [{id: 5, status: "running"}]);
  out.dropped = js.shownReason(s.jobs.get("5"));
  // a snapshot with the field (the query field's "" is "not waiting") wins
  s.applySnapshot(s.beginSnapshot(), [
    {id: 5, status: "queued", wait_reason: "waiting for job 4 to finish"},
    {id: 6, status: "queued", wait_reason: ""}]);
  out.fromSnapshot = [js.shownReason(s.jobs.get("5")), js.shownReason(s.jobs.get("6"))];
  // GET /2/jobs?bulk=1 rows get their reasons from GET /2/query/job?fields=id,wait_reason
  // (rows it does not name, or a failed query, leave the rows as they are)
  out.merged = js.withWaitReasons([{id: 7, status: "queued"}, {id: 8, status: "queued"}],
    {fields: [], data: [[[0, 7], [0, "waiting for job 6 to finish"]], [[0, 9], [0, ""]]]});
  out.mergedNone = js.withWaitReasons([{id: 7, status: "queued"}], null);
  out.cleared = s.applyJobEvent({type: "job", serial: 3, id: 5, status: "queued",
                                 wait_reason: null});
  // a job held while running shows its reason; a finished one never does
  s.applyJobEvent({type: "job", serial: 4, id: 5, status: "running",
                   wait_reason: `paused by filter rule ${uuid} (PAUSE) before its next opcode`});
  out.held = js.shownReason(s.jobs.get("5"));
  s.applyJobEvent({type: "job", serial: 5, id: 5, status: "success", wait_reason: "stale"});
  out.finished = js.shownReason(s.jobs.get("5"));
  out.short = fmt.shortenUuids(paused);
  out.kinds = [paused, "rate-limited by bucket '2:evacuate': 2 running",
               `rate-limited by filter rule ${uuid} (RATE_LIMIT 2): 2 running`,
               "waiting for job 12 to finish", "something new"].map(fmt.waitKind);
  out.actions = [fmt.actionText("PAUSE"), fmt.actionText(["RATE_LIMIT", 2])];
  out.shortUuid = fmt.shortUuid(uuid);
  done(out);
}, (err) => done({error: String(err)}));
"""


def browser_unavailable() -> str | None:
    """Why the browser tests cannot run here (a skip reason), or None."""
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not os.access(path, os.X_OK)]
    if missing:
        return (f"{' and '.join(missing)} not installed (make install-browser installs "
                f"Debian's chromium and chromium-driver)")
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (it is in the 'test' extra: make install)"
    return None


def start_browser(profile_dir: str, log_file: str):
    """Debian's headless Chromium driven by selenium; nothing is downloaded."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS + [f"--user-data-dir={profile_dir}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER, log_output=log_file),
                              options=options)
    driver.set_page_load_timeout(PAGE_TIMEOUT)
    driver.set_script_timeout(PAGE_TIMEOUT)
    return driver


class RapiDaemon:
    """ganeti-rapi on the master of a virtual cluster (``ganeti-vcluster start`` runs it),
    stopped and started again by the tests."""

    def __init__(self, cluster: VirtualCluster) -> None:
        self.paths = Paths.for_node(cluster.root, cluster.master)
        self.ip = cluster.ips[0]
        self.port = daemons.DAEMON_PORTS[constants.RAPI]

    @property
    def url(self) -> str:
        return f"https://{self.ip}:{self.port}"

    def running(self) -> bool:
        return daemons.state(self.paths, constants.RAPI).state == daemons.RUNNING

    def start(self, *extra: str) -> None:
        """Start it with the vcluster's arguments and ``extra`` ones; return once it listens."""
        log_file = self.paths.log_file(constants.RAPI)
        offset = os.path.getsize(log_file) if os.path.exists(log_file) else 0
        daemons.start(self.paths, constants.RAPI,
                      daemons.twistd_args(constants.RAPI, self.ip) + list(extra))
        daemons.wait_listening(self.paths, constants.RAPI, self.ip, self.port, offset)

    def restart(self, *extra: str) -> None:
        daemons.stop(self.paths, constants.RAPI)
        self.start(*extra)

    def log_tail(self, lines: int = 30) -> str:
        try:
            with open(self.paths.log_file(constants.RAPI), encoding="utf-8",
                      errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no log)"


class DashboardCase(ClusterCase):
    """A two-node cluster whose ganeti-rapi a headless Chromium reads (no tests of its
    own): the page helpers the dashboard tests share."""

    NODES = 2
    REQUIRES = (browser_unavailable,)
    rapi: RapiDaemon | None = None
    driver = None

    @classmethod
    def setUpCluster(cls):
        cls.tmp = cls.cluster.tmp
        cls.rapi = RapiDaemon(cls.cluster)
        if not cls.rapi.running():
            raise AssertionError("ganeti-vcluster start did not start ganeti-rapi")
        cls.driver = start_browser(os.path.join(cls.tmp, "profile"),
                                   os.path.join(cls.tmp, "chromedriver.log"))

    @classmethod
    def tearDownClass(cls):
        try:
            if cls.driver is not None:
                cls.driver.quit()
                cls.driver = None
        finally:
            super().tearDownClass()  # stops ganeti-rapi too

    # --- helpers -----------------------------------------------------------------

    def wait(self, condition, what, timeout=PAGE_TIMEOUT):
        """WebDriverWait for ``condition(driver)``; on timeout, fail with the page's state."""
        from selenium.common.exceptions import TimeoutException
        from selenium.webdriver.support.ui import WebDriverWait

        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.05).until(condition)
        except TimeoutException:
            self.fail(f"the dashboard did not show {what} within {timeout:g}s\n"
                      + self.diagnostics())

    def diagnostics(self) -> str:
        """What the page shows and logged, and the end of ganeti-rapi's log."""
        try:
            page = self.js("return document.querySelector('header').innerText + '\\n' + "
                           "document.getElementById('messages').innerText + '\\n' + "
                           "document.getElementById('jobs-body').innerText")
            record = self.js("return JSON.stringify(window.__dashRecord)")
            console = "\n".join(entry["message"] for entry in self.driver.get_log("browser"))
        except Exception as err:  # the browser itself may be the problem
            page, record, console = f"(page unreadable: {err})", "", ""
        return (f"--- page ---\n{page}\n--- recorded ---\n{record}\n--- browser console ---\n"
                f"{console}\n--- ganeti-rapi log ---\n{self.rapi.log_tail()}")

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def open_dashboard(self, base=None):
        """Load /dashboard/, start the recorder, wait for the cluster's name."""
        self.driver.get((base or self.rapi.url) + "/dashboard/")
        self.marker = uuid.uuid4().hex
        self.js("window.__dashMarker = arguments[0];", self.marker)
        self.js(RECORDER)
        self.wait(lambda d: self.text("#cluster-name") == "cluster.vcluster.test",
                  "the cluster's name")

    def text(self, selector):
        return self.js("const e = document.querySelector(arguments[0]);"
                       "return e ? e.textContent.trim() : null;", selector)


class DashboardTest(DashboardCase):
    """The dashboard on a running cluster, watched while jobs run."""

    PREFIX = "ganeti-dashboard-vc-"

    def setUp(self):
        self.luxi = self.cluster.client()
        self.addCleanup(self.luxi.close)
        self.open_dashboard()

    def job_status(self, job_id):
        return self.js("const b = document.querySelector("
                       "`tr[data-job-id=\"${arguments[0]}\"] .job-status`);"
                       "return b ? b.dataset.status : null;", str(job_id))

    def log_lines(self, job_id):
        return self.js("return [...document.querySelectorAll("
                       "`tr[data-log-for=\"${arguments[0]}\"] .job-log li .log-message`)]"
                       ".map((e) => e.textContent);", str(job_id))

    def record(self):
        return self.js("return window.__dashRecord;")

    def show_logs_of_new_jobs(self, on=True):
        """Tick (or untick) "Show the log of new jobs"."""
        box = self.driver.find_element("id", "auto-expand")
        if box.is_selected() != on:
            box.click()
        self.assertEqual(box.is_selected(), on)

    def wait_live(self):
        self.wait(lambda d: self.js("return document.getElementById('feed-state')"
                                    ".dataset.state") == "live",
                  "the feed as live", RECONNECT_TIMEOUT)

    def submit(self, *ops):
        job_id = self.luxi.call("SubmitJob", list(ops))
        self.addCleanup(self._finish, job_id)
        return job_id

    def _finish(self, job_id):
        with self.cluster.client() as c:
            wait_for_job(c, job_id, timeout=JOB_TIMEOUT)

    def assert_ran_live(self, job_id, messages):
        """The row went from queued/waiting/running to success, and the log lines
        ``messages`` were shown, some while the job still ran; the page was not reloaded."""
        self.wait(lambda d: self.job_status(job_id) == "success",
                  f"job {job_id} as success", JOB_TIMEOUT)
        self.wait(lambda d: len(self.log_lines(job_id)) == len(messages),
                  f"the {len(messages)} log lines of job {job_id}")
        self.assertEqual(self.log_lines(job_id), messages)
        self.assertEqual(wait_for_job(self.luxi, job_id), "success")
        record = self.record()
        statuses = record["statuses"][str(job_id)]
        self.assertIn(statuses[0], STARTED, f"job {job_id} first shown as {statuses}")
        self.assertEqual(statuses[-1], "success", statuses)
        self.assertEqual(statuses.count("success"), 1, statuses)
        self.assertIn("running", statuses, statuses)
        sizes = record["logs"][str(job_id)]
        self.assertTrue(any(status != "success" for _, status in sizes),
                        f"no log line of job {job_id} was shown before it ended: {sizes}")
        self.assertEqual([n for n, _ in sizes], sorted(n for n, _ in sizes), sizes)
        self.assertEqual(self.js("return window.__dashMarker;"), self.marker,
                         "the page was reloaded")

    # --- tests -------------------------------------------------------------------

    def test_shows_the_cluster_and_its_nodes(self):
        self.wait(lambda d: self.js("return document.querySelectorAll("
                                    "'#nodes-body tr[data-node-name]').length") == 2,
                  "both nodes")
        self.assertEqual(self.text("#cluster-master"), self.cluster.master)
        rows = self.js("""return [...document.querySelectorAll('#nodes-body tr.node-row')]
            .map((r) => [r.dataset.nodeName, r.querySelector('.node-role').textContent,
                         r.querySelector('.node-pip').textContent,
                         r.querySelector('.node-group').textContent]);""")
        self.assertEqual(rows, [[self.cluster.nodes[0], "master", self.cluster.ips[0], "default"],
                                [self.cluster.nodes[1], "master candidate",
                                 self.cluster.ips[1], "default"]])
        self.assertIn("default", self.text("#groups-body"))
        self.wait_live()
        # job 1 added node 2 (ganeti-vcluster create); it is listed from GET /2/jobs,
        # which the page asks for beside the feed (it may answer after the feed is live)
        self.wait(lambda d: self.job_status(1) == "success", "job 1 as succeeded")

    def test_a_job_appears_runs_and_shows_its_log_live(self):
        self.wait_live()
        self.show_logs_of_new_jobs(False)
        job_id = self.submit(delay(0.5, repeat=3))
        row = f'tr[data-job-id="{job_id}"]'
        self.wait(lambda d: self.job_status(job_id) is not None, f"job {job_id}", JOB_TIMEOUT)
        self.assertIsNone(self.js(f"return document.querySelector('[data-log-for=\"{job_id}\"]')"))
        # open its log as a user would, by clicking the job
        self.driver.find_element("css selector", f"{row} button.log-toggle").click()
        # Ganeti's LUTestDelay: repeat=N runs N iterations, logged i/N-1
        self.assert_ran_live(job_id, [f" - INFO: Test delay iteration {k}/2" for k in range(3)])
        self.assertEqual(self.js(f"return document.querySelector('{row} .job-summary')"
                                 ".textContent"), "TEST_DELAY(0.5)")
        self.assertEqual(self.js(f"return document.querySelector('{row} button.log-toggle')"
                                 ".getAttribute('aria-expanded')"), "true")
        # newest first
        ids = self.js("return [...document.querySelectorAll('#jobs-body tr.job-row')]"
                      ".map((r) => Number(r.dataset.jobId));")
        self.assertEqual(ids[0], job_id)
        self.assertEqual(ids, sorted(ids, reverse=True))

    def test_reconnects_after_ganeti_rapi_restarts(self):
        self.wait_live()
        self.rapi.restart()  # closes the page's feed socket
        self.wait_live()
        feed_states = self.record()["feed"]
        self.assertIn("reconnecting", feed_states[feed_states.index("live"):], feed_states)
        self.show_logs_of_new_jobs()
        job_id = self.submit(delay(0.4, repeat=2))
        self.assert_ran_live(job_id, [f" - INFO: Test delay iteration {k}/1" for k in range(2)])

    def test_authentication(self):
        self.wait_live()
        self.addCleanup(self.rapi.restart)  # anonymous reads again for the other tests
        self.rapi.restart("--require-authentication")
        # the open page's next requests are refused: it says why
        self.driver.find_element("id", "refresh-nodes").click()
        self.wait(lambda d: "requires authentication" in (
            self.text('#messages [data-key="auth"]') or ""), "the authentication message")
        # with the credentials (the browser asks for them), the page works, live
        with open(os.path.join(self.cluster.dir, "rapi-credentials"), encoding="utf-8") as f:
            user, password = f.read().split()
        quote = urllib.parse.quote
        self.open_dashboard(f"https://{quote(user, safe='')}:{quote(password, safe='')}"
                            f"@{self.rapi.ip}:{self.rapi.port}")
        self.assertIsNone(self.text('#messages [data-key="auth"]'))
        self.wait_live()
        self.show_logs_of_new_jobs()
        job_id = self.submit(delay(0.3, repeat=2))
        self.assert_ran_live(job_id, [" - INFO: Test delay iteration 0/1",
                                      " - INFO: Test delay iteration 1/1"])

    def test_job_list_merges_snapshots_and_feed_events(self):
        out = self.driver.execute_async_script(JOB_STORE_SCRIPT)
        self.assertEqual(out, {
            "applied": {"added": ["2"]},
            "afterSnapshot": [["2", "success"], ["1", "running"]],
            "log": ["a", "b"],
            "replayed": None,
            "lastSerial": 12,
            "stale": None,
            "afterResync": [["1", "success"]],
            "added": 1,
            "fullLog": ["a", "b", "c"],
        })

    def wait_reason_shown(self, job_id):
        """The wait line of a job's row: (visible text, title, kind), or None if hidden."""
        return self.js("const w = document.querySelector("
                       "`tr[data-job-id=\"${arguments[0]}\"] .job-wait`);"
                       "return w && !w.hidden ? [w.textContent, w.title, w.dataset.kind] : null;",
                       str(job_id))

    def filter_rows(self):
        """The filter rules table: [uuid, shown uuid, action, reason] per rule."""
        return self.js("""return [...document.querySelectorAll('#filters-body tr.filter-row')]
            .map((r) => [r.dataset.filterUuid, r.querySelector('.filter-uuid').textContent,
                         r.querySelector('.filter-action').textContent,
                         r.querySelector('.filter-reason').textContent]);""")

    def add_pause_rule(self):
        """A PAUSE rule for every job after the current ones (LUXI ReplaceFilter); its uuid.

        Its removal is a cleanup, so that a failing test does not hold the
        jobs of the next ones; a test that submits jobs after this adds that
        cleanup again (``release_after``), to run before the cleanups that wait
        for those jobs.
        """
        rule = self.luxi.call("ReplaceFilter", None, 0,
                              [["jobid", [">", "id", "watermark"]]], "PAUSE",
                              [["gnt:user", "dashboard test", 0]])
        self.addCleanup(self._delete_rule, rule)
        return rule

    def release_after(self, rule):
        """Remove ``rule`` before the cleanups registered so far (they wait for jobs)."""
        self.addCleanup(self._delete_rule, rule)

    def _delete_rule(self, rule):
        with self.cluster.client() as c:
            if [rule] in c.call("QueryFilters", None, ["uuid"]):
                c.call("DeleteFilter", rule)

    def test_a_paused_job_shows_why_until_its_rule_goes(self):
        self.wait_live()
        self.wait(lambda d: "Loading" not in self.text("#filters-body"), "the filter rules")
        self.show_logs_of_new_jobs(False)
        job_id = self.submit(delay(0.2))
        self.wait(lambda d: self.job_status(job_id) == "success", f"job {job_id} as success",
                  JOB_TIMEOUT)
        self.assertIsNone(self.wait_reason_shown(job_id))  # nothing held it
        rule = self.add_pause_rule()
        expected = f"paused by filter rule {rule} (PAUSE, reason 'dashboard test')"
        paused = self.submit(delay(0.2))
        self.release_after(rule)
        # the job cannot run while the rule is there: the page says why, live
        self.wait(lambda d: self.wait_reason_shown(paused) is not None,
                  f"why job {paused} waits")
        text, title, kind = self.wait_reason_shown(paused)
        self.assertEqual(title, expected)
        self.assertEqual(text, expected.replace(rule, rule[:8] + "…"))
        self.assertEqual(kind, "paused")
        self.assertEqual(self.job_status(paused), "queued")
        # the same text as the job's query field
        (row,) = self.luxi.call("QueryJobs", [paused], ["status", "wait_reason"])
        self.assertEqual(row, ["queued", expected])
        # the rule is listed (read again because a job's reason changed)
        self.wait(lambda d: any(r[0] == rule for r in self.filter_rows()), "the PAUSE rule")
        self.assertIn([rule, rule[:8] + "…", "PAUSE", "dashboard test"], self.filter_rows())
        # without the rule the job runs; the reason goes, and so does the rule
        self.luxi.call("DeleteFilter", rule)
        self.wait(lambda d: self.job_status(paused) == "success", f"job {paused} as success",
                  JOB_TIMEOUT)
        self.assertIsNone(self.wait_reason_shown(paused))
        self.wait(lambda d: all(r[0] != rule for r in self.filter_rows()),
                  "the rule's removal")
        reasons = self.record()["reasons"][str(paused)]
        self.assertIn(["queued", expected], reasons)
        self.assertEqual(reasons[-1], ["success", ""], reasons)
        # the reason went before (or as) the job started: never shown while it ran
        self.assertFalse([r for r in reasons if r[0] != "queued" and r[1]], reasons)
        self.assertEqual(self.js("return window.__dashMarker;"), self.marker,
                         "the page was reloaded")

    def test_wait_reasons_in_the_job_model(self):
        uuid_ = "0c6e1f2a-8b1d-4f8e-9d55-3b5c0a0e2f41"
        paused = f"paused by filter rule {uuid_} (PAUSE, reason 'maintenance')"
        out = self.driver.execute_async_script(WAIT_REASON_SCRIPT)
        self.assertEqual(out, {
            "set": {"id": "5", "isNew": True, "reasonChanged": True},
            "same": {"id": "5", "isNew": False, "reasonChanged": False},
            "shown": paused,
            "kept": [paused, None],
            "dropped": None,
            "fromSnapshot": ["waiting for job 4 to finish", None],
            "merged": [{"id": 7, "status": "queued", "wait_reason": "waiting for job 6 to finish"},
                       {"id": 8, "status": "queued"}],
            "mergedNone": [{"id": 7, "status": "queued"}],
            "cleared": {"id": "5", "isNew": False, "reasonChanged": True},
            "held": f"paused by filter rule {uuid_} (PAUSE) before its next opcode",
            "finished": None,
            "short": "paused by filter rule 0c6e1f2a… (PAUSE, reason 'maintenance')",
            "kinds": ["paused", "rate-limited", "rate-limited", "dependency", "other"],
            "actions": ["PAUSE", "RATE_LIMIT 2"],
            "shortUuid": "0c6e1f2a…",
        })

    def test_follows_the_master_daemon_going_away_and_coming_back(self):
        self.wait_live()
        self.wait(lambda d: self.text("#upstream-state") == "connected", "masterd as connected")
        self.luxi.close()
        daemons.stop(self.rapi.paths, constants.MASTERD)
        self.wait(lambda d: self.js("return document.getElementById('upstream-state')"
                                    ".dataset.state") == "disconnected",
                  "masterd as not reachable")
        self.cluster.start()  # masterd again, once it answers LUXI
        self.wait(lambda d: self.js("return document.getElementById('upstream-state')"
                                    ".dataset.state") == "connected",
                  "masterd as connected again", RECONNECT_TIMEOUT)
        # the feed resynchronised; new jobs still show up live
        self.luxi = self.cluster.client()
        self.addCleanup(self.luxi.close)
        self.show_logs_of_new_jobs()
        job_id = self.submit(delay(0.3, repeat=2))
        self.assert_ran_live(job_id, [" - INFO: Test delay iteration 0/1",
                                      " - INFO: Test delay iteration 1/1"])

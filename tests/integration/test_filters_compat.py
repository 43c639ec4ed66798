"""Job filter rules with Ganeti's own clients: Debian's ``GanetiRapiClient``
(``AddFilter``, ``GetFilters``, ``GetFilter``, ``ReplaceFilter``, ``DeleteFilter``)
against our ganeti-rapi, and Debian Ganeti 3.0's ``gnt-filter`` against our
master daemon, on a real one-node virtual cluster.

The RAPI client runs under Debian's ``/usr/bin/python3`` through the driver of
test_rapi_compat.py (a list of calls in, their outcomes out).  Each test
removes the rules it added, so the tests do not depend on each other's order.
"""

from __future__ import annotations

import json
import os
import uuid as uuidmod

from tests.integration.helpers import node_env, run
from tests.integration.jobtools import delay, wait_for_job
from tests.integration.test_rapi_compat import (
    RAPI_CLIENT,
    SYSTEM_PYTHON,
    RapiClientCase,
    call,
    run_driver,
)

DEBIAN_GNT_FILTER = "/usr/share/ganeti/3.0/gnt-filter"
DRAIN = [["jobid", [">", "id", "watermark"]]]
FIELDS = ["uuid", "watermark", "priority", "predicates", "action", "reason_trail"]


def _neither_client():
    if not (os.path.exists(SYSTEM_PYTHON) and os.path.exists(RAPI_CLIENT)
            or os.path.exists(DEBIAN_GNT_FILTER)):
        return ("Debian's ganeti-3.0 and python3-ganeti-rapi are not installed (make test "
                "installs them)")
    return None


class FiltersCompatTest(RapiClientCase):
    """Ganeti 3.0's RAPI client and gnt-filter against a one-node virtual cluster."""

    PREFIX = "ganeti-filters-"
    REQUIRES = (_neither_client,)
    has_rapi_client = os.path.exists(SYSTEM_PYTHON) and os.path.exists(RAPI_CLIENT)
    has_gnt_filter = os.path.exists(DEBIAN_GNT_FILTER)

    def setUp(self):
        self.addCleanup(self.remove_all_rules)

    # helpers

    def luxi(self, method, *args):
        assert self.cluster is not None
        with self.cluster.client() as client:
            return client.call(method, *args)

    def rules(self):
        """Every rule, as our master answers QueryFilters (by uuid)."""
        return [dict(zip(FIELDS, row, strict=True))
                for row in self.luxi("QueryFilters", None, FIELDS)]

    def remove_all_rules(self):
        for rule in self.rules():
            self.luxi("DeleteFilter", rule["uuid"])

    def finished_job(self):
        """Run a job to its end (it raises the watermark); its id."""
        assert self.cluster is not None
        with self.cluster.client() as client:
            job_id = client.call("SubmitJob", [delay(0.1)])
            self.assertEqual(wait_for_job(client, job_id), "success")
        return job_id

    def rapi(self, *calls):
        """Run the calls with Debian's GanetiRapiClient; each call's value (errors as
        ``{"error": {"class", "code", "message"}}``)."""
        if not self.has_rapi_client:
            self.skipTest("Debian's python3-ganeti-rapi is not installed")
        assert self.cluster is not None
        opts = {"host": self.cluster.ips[0], "port": 5080, "user": self.user,
                "password": self.password}
        return run_driver(self.driver, opts, calls)

    def gnt_filter(self, *argv):
        """Run Debian's gnt-filter on the master node; the CompletedProcess."""
        if not self.has_gnt_filter:
            self.skipTest("Debian's ganeti-3.0 is not installed")
        assert self.cluster is not None
        env = node_env(self.cluster.dir)
        env["PYTHONHASHSEED"] = "0"
        return run([DEBIAN_GNT_FILTER, *argv], env=env, check=False, timeout=60)

    def assertApiError(self, outcome, code):
        self.assertIsInstance(outcome, dict)
        self.assertEqual((outcome.get("error") or {}).get("code"), code, outcome)

    # Ganeti's RAPI client

    def test_rapi_client_add_get_replace_delete(self):
        job_id = self.finished_job()
        (uid,) = self.rapi(call("AddFilter", 1, DRAIN, "REJECT",
                                [["gnt:user", "maintenance", 7]]))
        self.assertEqual(str(uuidmod.UUID(uid)), uid.lower())
        (rule,) = self.rules()
        self.assertEqual({k: rule[k] for k in FIELDS[:5]},
                         {"uuid": uid, "watermark": job_id, "priority": 1,
                          "predicates": DRAIN, "action": "REJECT"})
        # the client appends its own entry; the master appends luxid's
        self.assertEqual(rule["reason_trail"][0], ["gnt:user", "maintenance", 7])
        self.assertEqual(rule["reason_trail"][1][:2], ["gnt:client", ""])
        self.assertEqual(rule["reason_trail"][2][:2], ["luxid", ""])

        ids, bulk, one = self.rapi(call("GetFilters"), call("GetFilters", bulk=True),
                                   call("GetFilter", uid))
        self.assertEqual(ids, [uid])
        self.assertEqual(bulk, [rule])
        self.assertEqual(one, rule)

        replaced, limited = self.rapi(call("ReplaceFilter", uid, 0, [], "PAUSE"),
                                      call("AddFilter", 5, [], ["RATE_LIMIT", 2]))
        self.assertEqual(replaced, uid)
        rules = self.rules()
        # listed by uuid, as Ganeti's luxid does
        self.assertEqual([(r["uuid"], r["priority"], r["predicates"], r["action"])
                          for r in rules], sorted([(uid, 0, [], "PAUSE"),
                                                   (limited, 5, [], ["RATE_LIMIT", 2])]))
        ids, bulk = self.rapi(call("GetFilters"), call("GetFilters", bulk=True))
        self.assertEqual(ids, sorted([uid, limited]))
        self.assertEqual([r["uuid"] for r in bulk], sorted([uid, limited]))

        deleted, again, gone, after = self.rapi(
            call("DeleteFilter", uid), call("DeleteFilter", uid), call("GetFilter", uid),
            call("GetFilters"))
        self.assertIsNone(deleted)
        self.assertApiError(again, 404)
        self.assertApiError(gone, 404)
        self.assertEqual(after, [limited])

    def test_rapi_client_replace_creates_with_the_given_uuid(self):
        uid = str(uuidmod.uuid4())
        (answer,) = self.rapi(call("ReplaceFilter", uid, 3, DRAIN, "ACCEPT"))
        self.assertEqual(answer, uid)
        self.assertEqual([(r["uuid"], r["priority"]) for r in self.rules()], [(uid, 3)])

    def test_rapi_client_invalid_rules_are_400(self):
        results = self.rapi(call("AddFilter", -1, [], "REJECT"),
                            call("AddFilter", 0, [], "DROP"),
                            call("AddFilter", 0, [], ["RATE_LIMIT", 0]),
                            call("AddFilter", 0, [["nonsense", ["=", "id", 1]]], "REJECT"),
                            call("ReplaceFilter", "not-a-uuid", 0, [], "REJECT"),
                            call("GetFilter", str(uuidmod.uuid4())),
                            call("DeleteFilter", str(uuidmod.uuid4())))
        for outcome in results[:5]:
            self.assertApiError(outcome, 400)
        self.assertIn("Unable to parse UUID", results[4]["error"]["message"])
        self.assertApiError(results[5], 404)
        self.assertApiError(results[6], 404)
        self.assertEqual(self.rules(), [])

    def test_rapi_client_query_filter(self):
        uid = self.luxi("ReplaceFilter", None, 2, DRAIN, "PAUSE", [])
        result, fields = self.rapi(call("Query", "filter", ["uuid", "priority", "action"]),
                                   call("QueryFields", "filter", ["uuid", "watermark"]))
        self.assertEqual(result["data"], [[[0, uid], [0, 2], [0, "PAUSE"]]])
        self.assertEqual([(f["name"], f["title"]) for f in fields["fields"]],
                         [("uuid", "UUID"), ("watermark", "Watermark")])

    # Ganeti's gnt-filter

    def test_gnt_filter_list_shows_our_rules(self):
        job_id = self.finished_job()
        drain = self.luxi("ReplaceFilter", None, 1, DRAIN, "REJECT",
                          [["gnt:user", "maintenance", 7]])
        limit = self.luxi("ReplaceFilter", None, 4, [], ["RATE_LIMIT", 3], [])
        r = self.gnt_filter("list")
        self.assertEqual(r.returncode, 0, r.stderr)
        header, *lines = r.stdout.splitlines()
        self.assertEqual(header.split(), ["UUID", "Watermark", "Priority", "Predicates",
                                          "Action", "ReasonTrail"])
        by_uuid = {line.split()[0]: line for line in lines}
        self.assertEqual(set(by_uuid), {drain, limit})
        # Ganeti prints values of kind "other" with Python's str()
        self.assertEqual(by_uuid[drain].split()[1:3], [str(job_id), "1"])
        self.assertIn("[['jobid', ['>', 'id', 'watermark']]] REJECT", by_uuid[drain])
        self.assertIn("['gnt:user', 'maintenance', 7]", by_uuid[drain])
        self.assertEqual(by_uuid[limit].split()[1:3], [str(job_id), "4"])
        self.assertIn("['RATE_LIMIT', 3]", by_uuid[limit])

        r = self.gnt_filter("list", "--no-headers", "--separator", "|", "-o",
                            "uuid,priority,action", limit)
        self.assertEqual((r.returncode, r.stdout), (0, f"{limit}|4|['RATE_LIMIT', 3]\n"),
                         r.stderr)

    def test_gnt_filter_list_fields_and_info(self):
        uid = self.luxi("ReplaceFilter", None, 2, DRAIN, "PAUSE", [])
        r = self.gnt_filter("list-fields")
        self.assertEqual(r.returncode, 0, r.stderr)
        names = [line.split()[0] for line in r.stdout.splitlines()[1:]]
        self.assertEqual(sorted(names), sorted(FIELDS))
        r = self.gnt_filter("info", uid)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.splitlines()[:5], [
            f"UUID: {uid}", "  Watermark: " + str(self.rules()[0]["watermark"]),
            "  Priority: 2", "  Predicates: [['jobid', ['>', 'id', 'watermark']]]",
            "  Action: PAUSE"])
        r = self.gnt_filter("info")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"UUID: {uid}\n", r.stdout)

    def test_gnt_filter_add_replace_delete(self):
        r = self.gnt_filter("add", "--priority=3", "--action=RATE_LIMIT 4",
                            "--predicates", json.dumps(DRAIN), "--reason", "throttle")
        self.assertEqual(r.returncode, 0, r.stderr)
        uid = r.stdout.strip()
        (rule,) = self.rules()
        self.assertEqual((rule["uuid"], rule["priority"], rule["action"], rule["predicates"]),
                         (uid, 3, ["RATE_LIMIT", 4], DRAIN))
        self.assertEqual(rule["reason_trail"][0][:2], ["gnt:user", "throttle"])
        r = self.gnt_filter("replace", "--action=ACCEPT", uid)
        self.assertEqual((r.returncode, r.stdout.strip()), (0, uid), r.stderr)
        self.assertEqual([(x["priority"], x["action"]) for x in self.rules()],
                         [(0, "ACCEPT")])
        r = self.gnt_filter("delete", uid)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.rules(), [])

"""The job queue's LUXI answers as Ganeti 3.0's luxid gives them (issue 14).

Every expected value here was read from a real Ganeti 3.0 cluster (Debian's
luxid and job processes): the wire answers of SubmitJob, SubmitManyJobs,
CancelJob, ChangeJobPriority, QueryJobs and WaitForJobChange, the job files
it writes for rejected and dequeued jobs, and its opcode echo.  The requests
go through the real LUXI server protocol, so what is checked is what a
client reads.
"""

import json

from twisted.internet import defer
from twisted.internet.testing import StringTransport

from ganeti.core import errors, opcodes
from ganeti.luxi import wire
from tests.master.test_jobqueue import QueueTestCase, delay


class LuxiCase(QueueTestCase):
    def answer(self, method, *args):
        """The decoded answer frame ``{"success": ..., "result": ...}`` of one request."""
        proto = self.daemon.luxi.factory.buildProtocol(None)
        transport = StringTransport()
        proto.makeConnection(transport)
        proto.dataReceived(wire.encode_request(method, list(args)))
        self.reactor.advance(0)
        frame = transport.value()
        proto.connectionLost()
        self.assertTrue(frame.endswith(b"\x03"), frame)
        return json.loads(frame[:-1])

    def ok(self, method, *args):
        response = self.answer(method, *args)
        self.assertTrue(response["success"], response)
        return response["result"]

    def refused_as_unparsable(self, method, *args):
        """luxid's answer to a request it cannot parse: a plain string (RequestError)."""
        response = self.answer(method, *args)
        self.assertFalse(response["success"])
        self.assertIsInstance(response["result"], str)
        self.assertRaises(errors.RequestError, wire.parse_response,
                          json.dumps(response).encode())
        return response["result"]

    def add_rule(self, action, predicates):
        return self.successResultOf(defer.Deferred.fromCoroutine(
            self.daemon.filters.replace_filter(None, 0, predicates, action, [])))


class SubmitParsingTest(LuxiCase):
    def test_ill_typed_opcodes_are_refused_while_parsing(self):
        # luxid's wording, read on Ganeti 3.0 (the value's problem in our words)
        allowed = ('["OP_ID","comment","debug_level","depends","dry_run","duration",'
                   '"interruptible","no_locks","on_master","on_node_uuids","on_nodes",'
                   '"priority","reason","repeat"]')
        for ops, text in [
                ([delay("x")], "Can't parse value for 'duration': expected a number, "
                               'got "x"'),
                ([{"OP_ID": "OP_FOO"}], "Unknown opcode OP_FOO"),
                ([{"OP_ID": "OP_TEST_DELAY", "reason": []}],
                 'key \'duration\' not found, object contains only ["OP_ID","reason"]'),
                ([{"reason": []}],
                 'key \'OP_ID\' not found, object contains only ["reason"]'),
                ([{"OP_ID": 5}], "key 'OP_ID': Unable to read String"),
                ([delay(1, bogus=3)],
                 f'Superfluous dictionary keys: ["bogus"], but only {allowed} allowed.'),
                ([5], "Unable to read JSObject"),
                ([delay(1, priority=7)], "Can't parse value for 'priority': "),
                ([delay(1, depends=[[1, ["bad"]]])], "Can't parse value for 'depends[0][1][0]'")]:
            got = self.refused_as_unparsable("SubmitJob", ops)
            self.assertTrue(got.startswith(f"Failed to parse request: SubmitJob: {text}"),
                            (got, text))
        self.assertEqual(self.queue.jobs, {})

    def test_wrong_argument_shapes_are_refused_while_parsing(self):
        for method, args in [("SubmitJob", [5]), ("SubmitJob", []),
                             ("CancelJob", [-1, False]), ("ChangeJobPriority", [1, "x"]),
                             ("ArchiveJob", ["abc"]), ("SetDrainFlag", ["x"]),
                             ("QueryJobs", [["x"], ["id"]])]:
            text = self.refused_as_unparsable(method, *args)
            self.assertTrue(text.startswith("Failed to parse request: "), text)

    def test_submit_many_with_one_invalid_job_refuses_all(self):
        text = self.refused_as_unparsable("SubmitManyJobs", [[delay(1)], [delay("x")]])
        self.assertEqual(text, "Failed to parse request: SubmitManyJobs: Can't parse value for "
                               "'duration': expected a number, got \"x\"")
        self.assertEqual(self.queue.jobs, {})
        self.assertEqual(self.ok("SubmitManyJobs", []), [])
        self.assertEqual(self.ok("SubmitManyJobs", [[delay(1)], [delay(2)]]),
                         [[True, 1], [True, 2]])

    def test_drained_queue(self):
        self.ok("SetDrainFlag", True)
        for method, args in [("SubmitJob", [delay(1)]), ("SubmitManyJobs", []),
                             ("SubmitManyJobs", [[delay(1)]])]:
            response = self.answer(method, args)
            self.assertEqual(response, {"success": False,
                                        "result": ["GenericError", ["Queue drained"]]})
        # A bad opcode is a parse failure even then (luxid parses first).
        self.refused_as_unparsable("SubmitJob", [delay(1, bogus=1)])
        self.assertIsInstance(self.ok("SubmitJobToDrainedQueue", [delay(1)]), int)


class RejectTest(LuxiCase):
    def test_rejected_job_gets_an_id_and_is_stored_cancelled(self):
        self.add_rule("REJECT", [["opcode", ["=", "OP_ID", "OP_TEST_DELAY"]]])
        job_id = self.ok("SubmitJob", [delay(1)])
        self.assertEqual(self.ok("SubmitManyJobs", [[delay(1)]]), [[True, job_id + 1]])
        row = self.ok("QueryJobs", [job_id], ["status", "opstatus", "opresult", "oplog",
                                              "start_ts", "opstart", "opexec"])
        self.assertEqual(row, [["canceled", ["canceled"], [None], [[]], None, [None], [None]]])
        end_ts, opend = self.ok("QueryJobs", [job_id], ["end_ts", "opend"])[0]
        self.assertEqual(opend, [end_ts])
        self.reactor.advance(5)
        self.assertEqual(self.ok("QueryJobs", [job_id], ["status"]), [["canceled"]])


class CancelAnswersTest(LuxiCase):
    max_running = 1

    def test_answers_as_luxid(self):
        running = self.ok("SubmitJob", [delay(10), delay(10)])
        queued = self.ok("SubmitJob", [delay(1)])
        self.assertEqual(self.ok("CancelJob", queued, False), [True, f"Dequeued job {queued}"])
        self.assertEqual(self.ok("QueryJobs", [queued], ["status", "opresult", "start_ts"]),
                         [["canceled", [None], None]])
        self.assertEqual(self.ok("CancelJob", queued, False),
                         [False, f"Job {queued} not found in queue"])
        self.assertEqual(self.ok("CancelJob", running, False),
                         [False, "Job no longer waiting, can't cancel (informed it anyway)"])
        self.assertEqual(self.ok("CancelJob", 999, False), [False, "Job 999 not found in queue"])
        # informed: the next opcode does not start
        self.reactor.advance(10)
        self.assertEqual(self.ok("QueryJobs", [running], ["opstatus", "opresult"]),
                         [[["success", "canceled"], [None, "Job canceled by request"]]])

    def test_kill(self):
        running = self.ok("SubmitJob", [delay(100)])
        self.assertEqual(self.ok("CancelJob", running, True),
                         [True, "SIGKILL send to the process"])
        self.assertEqual(self.ok("QueryJobs", [running], ["status"]), [["canceled"]])

    def test_change_priority_of_finished_or_unknown_job(self):
        job_id = self.ok("SubmitJob", [delay(1)])
        self.reactor.advance(1)
        for jid in (job_id, 999):
            self.assertEqual(self.ok("ChangeJobPriority", jid, 10),
                             [False, f"Job {jid} not found in queue"])


class MissingJobTest(LuxiCase):
    def test_query_jobs_gives_the_id_and_nulls(self):
        self.assertEqual(self.ok("QueryJobs", [77], ["id", "status", "ops"]),
                         [[77, None, None]])

    def test_wait_for_job_change_is_job_lost(self):
        response = self.answer("WaitForJobChange", 77, ["status"], None, None, 1)
        self.assertEqual(response, {"success": False,
                                    "result": ["JobLost", ["Can't load job file"]]})


class EchoTest(LuxiCase):
    def test_queued_job_leaves_unset_parameters_out_but_depends_and_comment(self):
        # luxid's job file until the job starts
        blocker = self.ok("SubmitJob", [delay(10)])
        job_id = self.ok("SubmitJob", [delay(1, dry_run=None, debug_level=None,
                                             on_node_uuids=None, comment=None,
                                             depends=[[blocker, []]])])
        (op,) = self.ok("QueryJobs", [job_id], ["ops"])[0][0]
        self.assertEqual(sorted(op), sorted([
            "OP_ID", "comment", "depends", "duration", "interruptible", "no_locks",
            "on_master", "on_nodes", "priority", "reason", "repeat"]))
        self.assertIsNone(op["comment"])
        self.assertEqual((op["priority"], op["on_master"], op["on_nodes"], op["repeat"]),
                         (0, True, [], 0))
        # Once it has run: Ganeti's job process wrote every parameter (unset ones
        # null, debug_level 0) and LUTestDelay its node UUIDs; luxid's echo of that
        # leaves the unset optional ones out again, and puts OP_ID after the common
        # parameters.
        self.reactor.advance(10)
        self.reactor.advance(1)
        self.assertEqual(self.ok("QueryJobs", [job_id], ["status"]), [["success"]])
        (op,) = self.ok("QueryJobs", [job_id], ["ops"])[0][0]
        master = self.daemon.config_writer.config.cluster.master_node
        self.assertEqual(list(op), [
            "debug_level", "priority", "depends", "comment", "reason", "OP_ID", "duration",
            "on_master", "on_nodes", "on_node_uuids", "repeat", "interruptible", "no_locks"])
        self.assertEqual((op["debug_level"], op["on_node_uuids"], op["comment"]),
                         (0, [master], None))

    def test_node_uuids_as_ganeti_records_them(self):
        cfg = self.daemon.config_writer.config
        master = cfg.nodes[cfg.cluster.master_node]
        short = master.name.split(".")[0]
        cases = [  # (params, recorded on_node_uuids, on_nodes)
            ({"on_master": False}, [], []),
            ({"on_master": True}, [master.uuid], []),
            # names are expanded; the master is not added twice
            ({"on_master": True, "on_nodes": [short]}, [master.uuid], [master.name]),
            ({"on_master": False, "on_nodes": ["nope.example.com"]}, [],
             ["nope.example.com"]),  # unknown: the job fails, [] stays recorded
        ]
        for params, uuids, names in cases:
            job_id = self.ok("SubmitJob", [delay(1, **params)])
            self.reactor.advance(1)
            (op,) = self.ok("QueryJobs", [job_id], ["ops"])[0][0]
            self.assertEqual((op["on_node_uuids"], op["on_nodes"]), (uuids, names), params)
        # an opcode that fails before it resolves anything records nothing
        job_id = self.ok("SubmitJob", [delay(0)])
        self.reactor.advance(1)
        self.assertEqual(self.ok("QueryJobs", [job_id], ["status"]), [["error"]])
        (op,) = self.ok("QueryJobs", [job_id], ["ops"])[0][0]
        self.assertNotIn("on_node_uuids", op)

    def test_resolved_nodes_recorded_as_ganeti_does(self):
        """Ganeti's units expand node names into the job's opcode: the UUID and full
        name (ExpandNodeUuidAndName), the nodes an OOB command acts on; whatever the
        opcode's outcome later."""
        cfg = self.daemon.config_writer.config
        master = cfg.nodes[cfg.cluster.master_node]
        short = master.name.split(".")[0]
        submitted = [
            ({"OP_ID": "OP_NODE_SET_PARAMS", "node_name": short, "drained": True},
             {"node_uuid": master.uuid, "node_name": master.name}),
            ({"OP_ID": "OP_OOB_COMMAND", "command": "health"},
             {"node_uuids": [master.uuid]}),
            ({"OP_ID": "OP_OOB_COMMAND", "command": "health", "node_names": [short]},
             {"node_uuids": [master.uuid], "node_names": [master.name]}),
            ({"OP_ID": "OP_GROUP_ASSIGN_NODES", "group_name": "default", "nodes": [short]},
             {"node_uuids": [master.uuid], "nodes": [master.name]}),
            # values converted to their types (ForceDictType on the opcode's dicts)
            ({"OP_ID": "OP_GROUP_ADD", "group_name": "rack9",
              "ndparams": {"spindle_count": "4"}, "diskparams": {"drbd": {"resync-rate": "9"}}},
             {"ndparams": {"spindle_count": 4}, "diskparams": {"drbd": {"resync-rate": 9}}}),
        ]
        for op, recorded in submitted:
            job_id = self.ok("SubmitJob", [op])
            self.reactor.advance(1)
            (echo,) = self.ok("QueryJobs", [job_id], ["ops"])[0][0]
            self.assertEqual({k: echo.get(k) for k in recorded}, recorded, op)

    def test_defaults_filled_and_unset_left_out_by_the_declarations(self):
        """luxid's echo follows the opcode declarations: a parameter with a default
        shows it (a reserved one too: OP_NODE_ADD's node_setup), an unset optional
        one is left out (whatever the job file holds)."""
        from ganeti.core.opcodes.base import luxid_echo, run_form
        decl = opcodes.OPCODES["OP_NODE_ADD"]
        stored = run_form(opcodes.validate({"OP_ID": "OP_NODE_ADD",
                                            "node_name": "node9.example.com"}), decl)
        self.assertIsNone(stored["dry_run"])
        echo = luxid_echo(stored, decl)
        self.assertEqual(list(echo), [
            "debug_level", "priority", "depends", "comment", "reason", "OP_ID", "node_name",
            "readd", "node_setup"])
        self.assertEqual((echo["readd"], echo["node_setup"]), (False, False))

    def test_given_values_stay(self):
        job_id = self.ok("SubmitJob", [delay(1, dry_run=False, debug_level=3)])
        (op,) = self.ok("QueryJobs", [job_id], ["ops"])[0][0]
        self.assertEqual((op["dry_run"], op["debug_level"]), (False, 3))
        self.reactor.advance(1)
        self.assertEqual(self.ok("QueryJobs", [job_id], ["status"]), [["success"]])

    def test_rejected_job_keeps_the_echo_form(self):
        self.add_rule("REJECT", [["opcode", ["=", "OP_ID", "OP_TAGS_GET"]]])
        job_id = self.ok("SubmitJob", [{"OP_ID": "OP_TAGS_GET", "kind": "cluster"}])
        (op,) = self.ok("QueryJobs", [job_id], ["ops"])[0][0]
        self.assertNotIn("name", op)
        self.assertNotIn("dry_run", op)


#: luxid's summary argument per opcode (Ganeti 3.0 src/Ganeti/OpCodes.hs,
#: opSummaryVal): every other opcode shows none.
HASKELL_SUMMARY_PARAM = {
    "OP_CLUSTER_VERIFY_GROUP": "group_name", "OP_GROUP_VERIFY_DISKS": "group_name",
    "OP_CLUSTER_RENAME": "name", "OP_QUERY": "what", "OP_QUERY_FIELDS": "what",
    "OP_NODE_REMOVE": "node_name", "OP_NODE_ADD": "node_name",
    "OP_NODE_MODIFY_STORAGE": "node_name", "OP_REPAIR_NODE_STORAGE": "node_name",
    "OP_NODE_SET_PARAMS": "node_name", "OP_NODE_POWERCYCLE": "node_name",
    "OP_NODE_MIGRATE": "node_name", "OP_NODE_EVACUATE": "node_name",
    "OP_GROUP_ADD": "group_name", "OP_GROUP_ASSIGN_NODES": "group_name",
    "OP_GROUP_SET_PARAMS": "group_name", "OP_GROUP_REMOVE": "group_name",
    "OP_GROUP_EVACUATE": "group_name", "OP_TAGS_GET": "kind", "OP_TAGS_SEARCH": "pattern",
    "OP_TEST_DELAY": "duration", "OP_TEST_ALLOCATOR": "iallocator",
    "OP_NETWORK_ADD": "network_name", "OP_NETWORK_REMOVE": "network_name",
    "OP_NETWORK_SET_PARAMS": "network_name", "OP_NETWORK_CONNECT": "network_name",
    "OP_NETWORK_DISCONNECT": "network_name",
}
#: Instance opcodes show their instance_name (all but OP_INSTANCE_RENAME, ...).
HASKELL_INSTANCE_SUMMARY = {
    "OP_INSTANCE_CREATE", "OP_INSTANCE_REINSTALL", "OP_INSTANCE_REMOVE",
    "OP_INSTANCE_STARTUP", "OP_INSTANCE_SHUTDOWN", "OP_INSTANCE_REBOOT",
    "OP_INSTANCE_REPLACE_DISKS", "OP_INSTANCE_FAILOVER", "OP_INSTANCE_MIGRATE",
    "OP_INSTANCE_MOVE", "OP_INSTANCE_CONSOLE", "OP_INSTANCE_ACTIVATE_DISKS",
    "OP_INSTANCE_DEACTIVATE_DISKS", "OP_INSTANCE_RECREATE_DISKS", "OP_INSTANCE_SET_PARAMS",
    "OP_INSTANCE_GROW_DISK", "OP_INSTANCE_CHANGE_GROUP", "OP_BACKUP_PREPARE",
    "OP_BACKUP_EXPORT", "OP_BACKUP_REMOVE",
}


class SummaryTest(LuxiCase):
    def test_every_declared_opcode_summarises_as_luxid(self):
        for op_id, decl in opcodes.OPCODES.items():
            wanted = HASKELL_SUMMARY_PARAM.get(op_id)
            if op_id in HASKELL_INSTANCE_SUMMARY:
                wanted = "instance_name"
            self.assertEqual(decl.summary_param, wanted, op_id)

    def test_examples_read_on_ganeti(self):
        for op, text in [
                ({"OP_ID": "OP_GROUP_RENAME", "group_name": "default", "new_name": "x"},
                 "GROUP_RENAME"),
                ({"OP_ID": "OP_TAGS_GET", "kind": "cluster"}, "TAGS_GET(TagKindCluster)"),
                ({"OP_ID": "OP_TAGS_GET", "kind": "node", "name": "n1"}, "TAGS_GET(TagKindNode)"),
                ({"OP_ID": "OP_TAGS_GET", "kind": "nodegroup", "name": "g"},
                 "TAGS_GET(TagKindGroup)"),
                ({"OP_ID": "OP_QUERY", "what": "node", "fields": ["name"]}, "QUERY(node)"),
                (delay(0.01), "TEST_DELAY(1.0e-2)"),
                ({"OP_ID": "OP_TAGS_SEARCH", "pattern": "x"}, "TAGS_SEARCH(x)")]:
            self.assertEqual(opcodes.summary(opcodes.validate(op)), text)

"""The master's query registry: every declared resource bound to getters and a row
source, and the one place Query, QueryFields and OP_QUERY look resources up."""

from twisted.internet import defer
from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import gnt_filter, gnt_group, gnt_job, gnt_node
from ganeti.core import query
from ganeti.core.errors import ECODE_INVAL, OpPrereqError
from ganeti.core.queryfields import catalog
from ganeti.master.jobs import filters
from ganeti.master.lu import query as luquery
from ganeti.master.query import (
    exportqueries,
    instancequeries,
    jobquery,
    networkqueries,
    nodequeries,
    osqueries,
    queryregistry,
)
from ganeti.master.query.queryregistry import QueryRegistry, QuerySource
from ganeti.rapi.resources import groups, jobs, nodes
from tests.fakes.masterd import InProcessMaster

#: The master's bound tables, by resource.
BOUND = {"job": jobquery.JOB_FIELDS, "lock": queryregistry.LOCK_TABLE,
         "node": nodequeries.NODE_FIELDS, "group": nodequeries.GROUP_FIELDS,
         "filter": filters.FILTER_FIELDS, "network": networkqueries.NETWORK_TABLE,
         "instance": instancequeries.INSTANCE_FIELDS, "os": osqueries.OS_FIELDS,
         "export": exportqueries.EXPORT_FIELDS}
GETTERS = {"job": jobquery.JOB_GETTERS, "lock": queryregistry.LOCK_GETTERS,
           "node": nodequeries.NODE_GETTERS, "group": nodequeries.GROUP_GETTERS,
           "network": networkqueries.NETWORK_GETTERS,
           "instance": instancequeries.INSTANCE_GETTERS, "os": osqueries.OS_GETTERS,
           "export": exportqueries.EXPORT_GETTERS}


class DeclarationsAndGettersTest(SynchronousTestCase):
    def test_every_declared_field_has_a_getter_and_back(self):
        self.assertEqual(sorted(BOUND), sorted(catalog.RESOURCES))
        for what, decls in catalog.RESOURCES.items():
            self.assertEqual([f.fielddef() for f in BOUND[what].values()],
                             [d.fielddef() for d in decls.values()], what)
            self.assertEqual([f.live for f in BOUND[what].values()],
                             [d.live for d in decls.values()], what)
        for what, getters in GETTERS.items():
            self.assertEqual(set(getters), set(catalog.RESOURCES[what]), what)

    def test_clients_name_declared_fields_only(self):
        # The command-line defaults and the remote API's bulk fields.
        for what, names in [
                ("node", gnt_node.LIST_DEFAULT_FIELDS + gnt_node.INFO_FIELDS
                 + list(nodes.N_FIELDS)),
                ("group", gnt_group.LIST_DEFAULT_FIELDS + gnt_group.INFO_FIELDS
                 + list(groups.G_FIELDS)),
                ("job", gnt_job.LIST_DEFAULT_FIELDS + gnt_job.INFO_FIELDS + list(jobs.J_FIELDS)),
                ("filter", gnt_filter.LIST_DEFAULT_FIELDS)]:
            self.assertEqual([n for n in names if n not in catalog.RESOURCES[what]], [], what)

    def test_rapi_schemas_come_from_the_declarations(self):
        decls = catalog.RESOURCES
        for schema, what, names in [(nodes.NODE, "node", nodes.N_FIELDS),
                                    (groups.GROUP, "group", groups.G_FIELDS),
                                    (jobs.JOB, "job", jobs.J_FIELDS)]:
            self.assertEqual(schema["properties"],
                             {n: decls[what][n].value_schema() for n in names})


def _answer(fields, qfilter):
    return {"fields": fields, "data": qfilter}


class RegistryTest(SynchronousTestCase):
    def setUp(self):
        self.registry = QueryRegistry()
        self.registry.register(QuerySource("lock", queryregistry.LOCK_TABLE, _answer))

    def test_unknown_resource(self):
        for what in ("node", "bogus", ["lock"], None, 3):
            err = self.assertRaises(OpPrereqError, self.registry.query_fields, what, None)
            self.assertEqual(err.args, (f"Resource {what!r} cannot be queried yet "
                                        "(known: lock)", ECODE_INVAL))
            failure = self.failureResultOf(defer.Deferred.fromCoroutine(
                self.registry.query(what, ["name"], None)), OpPrereqError)
            self.assertEqual(failure.value.args, err.args)

    def test_answers_plain_and_awaitable(self):
        d = defer.Deferred.fromCoroutine(self.registry.query("lock", ["a"], ["b"]))
        self.assertEqual(self.successResultOf(d), {"fields": ["a"], "data": ["b"]})

        async def later(fields, qfilter):
            return {"later": fields}
        self.registry.register(QuerySource("job", jobquery.JOB_FIELDS, later,
                                           ("QueryJobs", len)))
        d = defer.Deferred.fromCoroutine(self.registry.query("job", ["id"], None))
        self.assertEqual(self.successResultOf(d), {"later": ["id"]})
        self.assertEqual(sorted(self.registry.implementations()),
                         ["Query", "QueryFields", "QueryJobs"])
        self.assertEqual(self.registry.resources(), ["job", "lock"])

    def test_query_fields(self):
        self.assertEqual(self.registry.query_fields("lock", ["owner", "x"])["fields"], [
            {"name": "owner", "title": "Owner", "kind": "other", "doc": "Current lock owner(s)"},
            query.unknown_fielddef("x")])

    def test_registration_checked(self):
        self.assertRaises(ValueError, self.registry.register,
                          QuerySource("lock", queryregistry.LOCK_TABLE, _answer))  # twice
        self.assertRaises(ValueError, self.registry.register,
                          QuerySource("instance", {}, _answer))  # not declared
        self.assertRaises(ValueError, self.registry.register,
                          QuerySource("job", queryregistry.LOCK_TABLE, _answer))  # not its fields


class MasterRegistryTest(SynchronousTestCase):
    def test_master_answers_every_declared_resource(self):
        master = InProcessMaster(self.mktemp())
        self.addCleanup(master.stop)
        self.assertEqual(master.daemon.job_methods.registry.resources(),
                         sorted(catalog.RESOURCES))
        client = master.client()
        for what in catalog.RESOURCES:
            fields = client.call("QueryFields", what, None)["fields"]
            # every declared field but our extensions, which answer only when named
            self.assertEqual(sorted(f["name"] for f in fields),
                             sorted(n for n, d in catalog.RESOURCES[what].items()
                                    if not d.extension), what)
        named = client.call("QueryFields", "node", ["hv_accel", "name"])["fields"]
        self.assertEqual([(f["name"], f["kind"]) for f in named],
                         [("hv_accel", "text"), ("name", "text")])
        rows = client.call("QueryNodes", [], ["name", "role"], False)
        self.assertEqual(rows, [["node1.test", "M"]])

    def test_op_query_resources(self):
        self.assertEqual(luquery.RESOURCES, ("group", "instance", "job", "lock", "network",
                                             "node", "os"))

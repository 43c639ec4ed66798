"""The "instance" query fields: exactly what Ganeti 3.0's luxid declares."""

import json
import os

from twisted.trial.unittest import SynchronousTestCase

from ganeti.core import constants as c
from ganeti.core import query
from ganeti.core.queryfields import catalog
from ganeti.core.queryfields import instances as decls
from tests.fakes.configs import DATA_DIR


def _real_fields() -> list[dict]:
    with open(os.path.join(DATA_DIR, "instance-fields-3.0.json"), encoding="utf-8") as f:
        return json.load(f)["fields"]


class InstanceFieldsTest(SynchronousTestCase):
    def test_same_as_ganeti(self):
        """Every field luxid 3.0 answers to QueryFields("instance", null), no more, with
        its name, title, kind and description."""
        real = {f["name"]: f for f in _real_fields()}
        ours = {name: d.fielddef() for name, d in decls.INSTANCE_FIELDS.items()}
        self.assertEqual(sorted(ours), sorted(real))
        for name, fielddef in real.items():
            self.assertEqual(ours[name], fielddef, name)

    def test_query_fields_answer_in_ganeti_order(self):
        table = {n: query.Field.from_decl(d, lambda item: None)
                 for n, d in decls.INSTANCE_FIELDS.items()}
        self.assertEqual(query.query_fields(table, None)["fields"], _real_fields())

    def test_registered(self):
        self.assertIs(catalog.RESOURCES[c.QR_INSTANCE], decls.INSTANCE_FIELDS)
        self.assertIn(c.QR_INSTANCE, catalog.VIA_OPCODE)

    def test_aliases_are_copies_of_their_field(self):
        for alias, target in decls.ALIASES.items():
            mine, theirs = decls.INSTANCE_FIELDS[alias], decls.INSTANCE_FIELDS[target]
            self.assertEqual((mine.title, mine.kind, mine.doc, mine.live),
                             (theirs.title, theirs.kind, theirs.doc, theirs.live))
            self.assertEqual(mine.name, alias)

    def test_live_fields(self):
        self.assertEqual(decls.INSTANCE_LIVE_FIELDS,
                         {"status", "oper_state", "oper_ram", "oper_vcpus", "console"})

    def test_hostname_fields(self):
        self.assertEqual(sorted(n for n, d in decls.INSTANCE_FIELDS.items() if d.hostname),
                         ["name", "pnode"])

    def test_numbered_fields(self):
        self.assertIn(f"disk.size/{decls.MAX_DISKS - 1}", decls.INSTANCE_FIELDS)
        self.assertNotIn(f"disk.size/{decls.MAX_DISKS}", decls.INSTANCE_FIELDS)
        self.assertIn(f"nic.mac/{decls.MAX_NICS - 1}", decls.INSTANCE_FIELDS)
        self.assertNotIn(f"nic.mac/{decls.MAX_NICS}", decls.INSTANCE_FIELDS)

    def test_ordinal(self):
        self.assertEqual([decls.ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111)],
                         ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd",
                          "101st", "111th"])

    def test_status_values_documented(self):
        doc = decls.INSTANCE_FIELDS["status"].doc
        for status in decls.INSTST_ALL:
            if status != decls.INSTST_USERDOWN:  # Ganeti's text does not name it
                self.assertIn(f'"{status}"', doc)
        self.assertEqual(decls.INSTANCE_FIELDS["status"].value_schema()["enum"],
                         list(decls.INSTST_ALL))

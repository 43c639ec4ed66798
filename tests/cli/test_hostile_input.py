"""CLI arguments nested too deep are usage errors, not tracebacks (issue 13, item 9)."""

import argparse

from twisted.trial.unittest import SynchronousTestCase

from ganeti.cli import confd_query, gnt_filter
from ganeti.cli.framework import UsageError

DEEP = "[" * 50_000 + "]" * 50_000


class DeepArgumentsTest(SynchronousTestCase):
    def test_confd_query_argument(self):
        for text in (DEEP, '{"a": ' + DEEP + "}"):
            err = self.assertRaises(UsageError, confd_query.parse_query, text)
            self.assertIn("QUERY is not valid JSON: JSON nested", str(err))
        self.assertEqual(confd_query.parse_query('{"3": ["0"]}'), {"3": ["0"]})

    def test_filter_predicates_argument(self):
        err = self.assertRaises(argparse.ArgumentTypeError, gnt_filter.json_list, DEEP)
        self.assertIn("not valid JSON (JSON nested", str(err))
        self.assertEqual(gnt_filter.json_list('[["jobid", [">", "id", "watermark"]]]'),
                         [["jobid", [">", "id", "watermark"]]])

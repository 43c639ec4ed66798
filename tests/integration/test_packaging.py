"""`python setup.py sdist` yields a complete tarball."""

import os
import subprocess
import sys
import tarfile
import tempfile

from twisted.trial.unittest import SynchronousTestCase

from tests.integration.helpers import ROOT

EXPECTED = [
    "setup.py", "pyproject.toml", "MANIFEST.in", "README.md", "CHANGES.md", "Makefile",
    ".ci/run", "bin/gnt-cluster", "bin/ganeti-vcluster", "twisted/plugins/ganeti_masterd.py",
    "ganeti/__init__.py", "ganeti/core/config.py", "ganeti/luxi/server.py",
    "ganeti/master/tap.py", "ganeti/cli/gnt_cluster.py", "docs/man/gnt-cluster.8",
    "docs/man/ganeti-masterd.8", "docs/man/ganeti-vcluster.8", "docs/design/architecture.md",
    "etc/ganeti-masterd.service", "tests/data/config-3.1-shape.json",
    "tests/integration/test_masterd.py", "bin/gnt-node", "bin/gnt-group",
    "docs/man/gnt-node.8", "docs/man/gnt-group.8", "docs/man/ganeti-noded.8",
    "twisted/plugins/ganeti_noded.py", "docs/design/nodes-and-replication.md",
    "twisted/plugins/ganeti_rapi.py", "docs/man/ganeti-rapi.8", "docs/rapi.md",
    "docs/feeds.md", "docs/rapi-openapi.json", "ganeti/rapi/static/index.html",
    "ganeti/rapi/static/dashboard.js", "ganeti/feeds/relay.py", "ganeti/luxi/twclient.py",
    "twisted/plugins/ganeti_confd.py", "ganeti/confd/server.py", "ganeti/confd/client.py",
    "bin/ganeti-confd-query", "docs/man/ganeti-confd.8", "docs/man/ganeti-confd-query.8",
    "docs/confd.md", "bin/gnt-filter", "docs/man/gnt-filter.8", "ganeti/cli/gnt_filter.py",
    "etc/logrotate.d/ganeti", "ganeti/daemon/__init__.py", "ganeti/daemon/service.py",
]


class SdistTest(SynchronousTestCase):
    def test_sdist_is_complete(self):
        with tempfile.TemporaryDirectory() as dist:
            subprocess.run([sys.executable, "setup.py", "-q", "sdist", "--dist-dir", dist],
                           cwd=ROOT, check=True, capture_output=True)
            (name,) = os.listdir(dist)
            with tarfile.open(os.path.join(dist, name)) as tar:
                members = {m.split("/", 1)[1] for m in tar.getnames() if "/" in m}
        missing = [f for f in EXPECTED if f not in members]
        self.assertEqual(missing, [])
        self.assertFalse([m for m in members if "dropin.cache" in m or "__pycache__" in m])
        self.assertNotIn("twisted/__init__.py", members)
        self.assertNotIn("etc/logrotate.d-ganeti", members)  # replaced by etc/logrotate.d/

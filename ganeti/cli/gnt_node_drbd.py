"""``gnt-node list-drbd NODE``: the DRBD minors a node uses, from confd.

As Ganeti's: one ``node-drbd`` request (``CONFD_REQ_NODE_DRBD``), answered from the
config (node, minor, instance, disk name such as ``disk/0``, role, peer node),
sorted, in Ganeti's
table (``Node Minor Instance Disk Role PeerNode``).  Ganeti asks the confd on
localhost; this tool asks the master candidates of ssconf
(``master_candidates_ips``), as ``ganeti-confd-query`` does, and keeps the answer
with the newest config serial, so it works from any node of the cluster.
"""

from __future__ import annotations

import argparse
from typing import Any

from ganeti.cli import gnt_node_storage
from ganeti.cli.framework import Context
from ganeti.confd import client
from ganeti.core import constants as c
from ganeti.core import errors

FIELDS = ("node", "minor", "instance", "disk", "role", "peer")
HEADERS = {"node": "Node", "minor": "Minor", "instance": "Instance", "disk": "Disk",
           "role": "Role", "peer": "PeerNode"}
#: Seconds to wait for the candidates' answers.
TIMEOUT = 10.0

DESCRIPTION = ("Query the list of used DRBD minors on the given node: each mirrored disk "
               "with its minor, instance, disk name, role on this node and peer node, as "
               "the master candidates' confd knows them from the config.")


def setup_list_drbd(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-headers", dest="no_headers", action="store_true",
                   help="Don't display column headers")
    p.add_argument("--separator", default=None, metavar="SEPARATOR",
                   help="Separator between output fields (defaults to one space)")
    p.add_argument("node_name", metavar="NODE", help="name of the node")


def _valid(answer: Any) -> bool:
    """Ganeti's ``HTNodeDrbd``: a list of [node, minor, instance, disk, role, peer], the
    minor a number, the rest strings."""
    def row_ok(row: Any) -> bool:
        if not isinstance(row, list) or len(row) != 6:
            return False
        node, minor, inst, disk, role, peer = row
        return (all(isinstance(v, str) for v in (node, inst, disk, role, peer))
                and isinstance(minor, int) and not isinstance(minor, bool) and minor >= 0)
    return isinstance(answer, list) and all(row_ok(r) for r in answer)


def cmd_list_drbd(ctx: Context, opts: argparse.Namespace) -> int:
    peers = client.read_peers(ctx.paths)
    if not peers:
        raise errors.ConfigurationError("no master candidates listed in ssconf "
                                        "master_candidates_ips")
    try:
        with open(ctx.paths.hmac_key, "rb") as f:
            key = f.read()
    except OSError as err:
        raise errors.ConfigurationError(
            f"cannot read the confd HMAC key {ctx.paths.hmac_key}: {err.strerror}") from None
    result = client.query_blocking(peers, key, c.CONFD_REQ_NODE_DRBD, opts.node_name,
                                   timeout=TIMEOUT)
    if not result.answered:
        ctx.err("Did not receive all expected confd replies")
        return c.EXIT_FAILURE
    if result.status != client.STATUS_OK:
        ctx.err(f"Query gave non-ok status '{result.status}': {result.answer}")
        return c.EXIT_FAILURE
    if not _valid(result.answer):
        ctx.err(f"Invalid response from server: expected a list of (node, minor, instance, "
                f"disk, role, peer), got {result.answer!r:.200}")
        return c.EXIT_FAILURE
    lines = gnt_node_storage.generate_table(
        None if opts.no_headers else HEADERS, FIELDS, opts.separator,
        sorted(result.answer), numfields=["minor"])
    for line in lines:
        ctx.out(line)
    return c.EXIT_SUCCESS

"""ganeti-confd-query: ask the master candidates' confd daemons one question.

Peers and HMAC key default to the node selected by the environment
(GANETI_ROOTDIR/GANETI_HOSTNAME): ssconf ``master_candidates_ips`` and
``hmac.key``.  The request goes out as :func:`ganeti.confd.client.query_blocking`
sends it; the reply with the highest serial is printed.

(This tool lives in the confd package, not ganeti.cli, because the layering
rules let neither package import the other.)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO

from ganeti import version
from ganeti.cli.framework import ToolParser, UsageError
from ganeti.confd import client
from ganeti.core import constants, errors, serializer
from ganeti.core.paths import Paths

TOOL = "ganeti-confd-query"
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2

DESCRIPTION = """\
Send one confd request to the cluster's master candidates and print the
answer with the highest configuration serial, the serial, which servers
answered, and a warning if servers with the same serial disagreed.

TYPE is a request type name or number:
""" + "\n".join(f"  {num:2d} {name}" for num, name in sorted(client.REQUEST_NAMES.items())) + """

QUERY is a string (a node or instance name, an IP, a NIC link, a JSON
pointer such as /cluster/cluster_name) or, starting with '{', a JSON object
for dict queries, e.g. '{"1": "192.0.2.10"}' for node-pip-by-instance-ip or
'{"3": [0, 1, 2]}' for cluster-master.

Exit codes: 0 answer with status ok, 1 error status or no answer, 2 usage.
"""


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port out of range 1-65535: {value}")
    return value


def _coverage(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < -1:
        raise argparse.ArgumentTypeError(f"must be -1 (all), 0 (default) or positive: {value}")
    return value


def _timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text!r}")
    return value


def _peer(text: str) -> str:
    import ipaddress
    try:
        return str(ipaddress.ip_address(text.strip()))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an IP address: {text!r}") from None


def build_parser(stdout: TextIO) -> argparse.ArgumentParser:
    """The argument parser (also the source of the man page's option list)."""
    p = ToolParser(prog=TOOL, description=DESCRIPTION, stdout=stdout,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version",
                   version=f"{TOOL} (ganeti-twisted {version.PACKAGE_VERSION}) "
                           f"{constants.RELEASE_VERSION}")
    p.add_argument("--peer", action="append", type=_peer, default=[], metavar="IP",
                   help="ask this confd server (repeatable; default: the master candidates "
                        "in ssconf master_candidates_ips)")
    p.add_argument("--port", type=_port, default=constants.DEFAULT_CONFD_PORT, metavar="P",
                   help=f"confd UDP port (default: {constants.DEFAULT_CONFD_PORT})")
    p.add_argument("--hmac-key-file", metavar="PATH",
                   help="file holding the confd HMAC key (default: the node's hmac.key)")
    p.add_argument("--coverage", type=_coverage, default=0, metavar="N",
                   help="ask N peers (0: up to 6, the default; -1: all)")
    p.add_argument("--timeout", type=_timeout, default=client.DEFAULT_EXPIRY, metavar="S",
                   help=f"give up waiting after S seconds (default: {client.DEFAULT_EXPIRY:g})")
    p.add_argument("--json", action="store_true",
                   help="print the result as one JSON object")
    p.add_argument("type", metavar="TYPE", help="request type name or number (see above)")
    p.add_argument("query", metavar="QUERY", nargs="?", default=None,
                   help="the query: a string, or a JSON object for dict queries")
    return p


def parse_query(text: str | None) -> Any:
    """The query argument: None, a plain string, or JSON (object or quoted string)."""
    if text is None:
        return None
    if text.lstrip().startswith(("{", "[", '"')):
        try:
            value = serializer.load_json(text)
        except ValueError as err:
            raise UsageError(f"QUERY is not valid JSON: {err}") from None
        if not isinstance(value, dict | str):
            raise UsageError("a JSON QUERY must be an object or a string")
        return value
    return text


def _format_answer(req_type: int, status: int, answer: Any) -> list[str]:
    if status == client.STATUS_ERROR and isinstance(answer, int) and not isinstance(answer, bool):
        return [f"error: {client.ERROR_NAMES.get(answer, 'unknown error')} ({answer})"]
    if status == client.STATUS_ERROR:
        return [f"error: {answer}"]
    if status == client.STATUS_NOTIMPLEMENTED:
        return ["not implemented by the server"]
    if req_type == client.REQUEST_TYPES["node-role"] and isinstance(answer, int):
        return [f"{client.ROLE_NAMES.get(answer, 'unknown role')} ({answer})"]
    if isinstance(answer, list):
        if not answer:
            return ["(none)"]
        return [a if isinstance(a, str) else json.dumps(a) for a in answer]
    if isinstance(answer, dict):
        return json.dumps(answer, indent=2, sort_keys=True).splitlines()
    if isinstance(answer, str):
        return [answer]
    return [json.dumps(answer)]


QueryFn = Callable[..., client.ConfdResult]


def _peers_and_key(opts: argparse.Namespace,
                   environ: Mapping[str, str]) -> tuple[list[str], bytes]:
    paths = Paths.from_env(environ)
    peers = list(opts.peer) if opts.peer else client.read_peers(paths)
    key_file = opts.hmac_key_file or paths.hmac_key
    try:
        with open(key_file, "rb") as f:
            key = f.read()
    except OSError as err:
        raise errors.ConfigurationError(
            f"cannot read the confd HMAC key {key_file}: {err.strerror}") from None
    if not peers:
        raise errors.ConfigurationError("no master candidates listed in ssconf "
                                        "master_candidates_ips; give --peer")
    return peers, key


def run(opts: argparse.Namespace, out: Callable[[str], None], err: Callable[[str], None],
        environ: Mapping[str, str], query_fn: QueryFn) -> int:
    """Send the request described by ``opts`` and print the result; the exit code."""
    req_type = client.request_type(opts.type)
    query = parse_query(opts.query)
    peers, key = _peers_and_key(opts, environ)
    if opts.coverage > len(peers):
        raise UsageError(f"--coverage {opts.coverage} is more than the {len(peers)} peers")
    result = query_fn(peers, key, req_type, query, port=opts.port, coverage=opts.coverage,
                      timeout=opts.timeout)
    if opts.json:
        out(json.dumps({
            "type": client.REQUEST_NAMES[req_type], "status": result.status,
            "answer": result.answer, "serial": result.serial, "server": result.server,
            "servers": result.servers, "asked": result.sent, "consistent": result.consistent,
            "timed_out": result.timed_out,
            "replies": [{"server": r.server, "status": r.status, "answer": r.answer,
                         "serial": r.serial} for r in result.replies],
        }, sort_keys=True))
    if not result.answered:
        raise _NoAnswer(f"no confd server answered within {opts.timeout:g} s "
                        f"(asked {result.sent} on port {opts.port})")
    assert result.status is not None
    if not opts.json:
        for line in _format_answer(req_type, result.status, result.answer):
            out(line)
        out(f"serial: {result.serial}")
        late = " (timed out waiting for the others)" if result.timed_out else ""
        out(f"answered by: {', '.join(result.servers)} "
            f"({len(result.replies)} of {result.sent} asked){late}")
    if not result.consistent:
        err("WARNING: servers with the same serial gave different answers: "
            + "; ".join(f"{r.server}: {json.dumps(r.answer)}"
                        for r in result.replies if r.serial == result.serial))
    return EXIT_OK if result.status == client.STATUS_OK else EXIT_ERROR


class _NoAnswer(Exception):
    pass


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None,
         stderr: TextIO | None = None, environ: Mapping[str, str] | None = None,
         query_fn: QueryFn | None = None) -> int:
    """Entry point of bin/ganeti-confd-query; streams, environment and the query
    function are injectable for tests."""
    out_stream = sys.stdout if stdout is None else stdout
    err_stream = sys.stderr if stderr is None else stderr
    argv = sys.argv[1:] if argv is None else list(argv)
    env = os.environ if environ is None else environ

    def out(text: str) -> None:
        out_stream.write(text + "\n")

    def err(text: str) -> None:
        err_stream.write(text + "\n")

    try:
        opts = build_parser(out_stream).parse_args(argv)
        return run(opts, out, err, env, query_fn or client.query_blocking)
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    except (UsageError, client.ConfdError) as exc:
        err(f"{TOOL}: usage error: {exc}")
        return EXIT_USAGE
    except _NoAnswer as exc:
        err(f"{TOOL}: {exc}")
        return EXIT_ERROR
    except errors.ConfigurationError as exc:
        err(f"{TOOL}: {exc.args[0] if exc.args else exc}")
        return EXIT_ERROR
    except OSError as exc:
        err(f"{TOOL}: {exc}")
        return EXIT_ERROR
    except KeyboardInterrupt:
        err("Aborted.")
        return EXIT_ERROR

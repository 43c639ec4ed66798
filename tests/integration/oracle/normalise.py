"""Normalising one side's output before the comparison: explicit rules, applied in order.

1. paths: the side's files directory -> ``<FILES>``, its cluster directory -> ``<DIR>``;
2. addresses: node and master IPs -> ``<ip:nodeN>`` / ``<ip:master>`` (whole addresses);
3. UUIDs -> ``<uuid:K>``, K numbering distinct UUIDs by first appearance in the output;
4. times: ``2026-11-24 14:32:42[.ffffff]``, ``Tue Nov 24 14:33:39 2026``, ISO
   ``2026-11-24T14:32:42[.ff]``, epoch seconds 1.5e9..2.5e9 (with a fraction or as
   ``[sec, usec]`` pairs) and epoch nanoseconds (reason trails) -> ``<time>``; the job
   durations of ``gnt-job info`` (``delta``, ``Total processing time``) -> ``<secs>``;
5. versions: the VCS version string -> ``<vcs-version>`` (different software);
6. serial numbers: ``serial_no`` values and ``Serial number:`` lines -> ``<serial>`` (each
   side's init and set-up make a different number of config writes);
7. per-case masks: regexes a case declares for host-dependent values (memory, disk
   free), whose groups are replaced by ``<masked>``;
8. lists of node names (comma-separated, or one per line in JSON) are sorted (Ganeti
   orders a group's nodes by their random UUIDs, so the order changes from cluster to
   cluster);
9. per-case ``unordered`` (runner.py): the lines of each output are sorted, without a
   trailing comma, for outputs whose order Ganeti does not define (``gnt-cluster
   verify``'s per-node messages; RAPI features, a Python set in ganeti-rapi whose order
   changes with the daemon's hash seed).

Job ids need no rule: the runner keeps both sides' job ids equal (see runner.py).
"""

from __future__ import annotations

import re

from tests.integration.oracle.sides import Side

UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
TIMES = [
    re.compile(r"\b\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?(?:[+-]\d\d:?\d\d|Z)?"),
    re.compile(r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|"
               r"Nov|Dec) [ \d]\d \d\d:\d\d:\d\d \d{4}\b"),
    re.compile(r"\[\s*1[5-9]\d{8}(?:\.\d+)?,\s*\d{1,6}\s*\]"),
    re.compile(r"(?<![\d.])(?:1[5-9]|2[0-4])\d{8}\.\d+(?:e[+-]?\d+)?(?![\d.])"),
    re.compile(r"(?<![\d.])1[5-9]\d{17}(?![\d.])"),  # nanoseconds (reason trails)
    re.compile(r"\b\d{4}-\d\d-\d\d_\d\d_\d\d_\d\d\b"),  # test-jobqueue's job comments
]
# Durations of job processing (gnt-job info): "(delta 0.66s)", "Total processing time: 1.3 seconds".
DURATIONS = [(re.compile(r"\(delta -?\d+(?:\.\d+)?s\)"), "(delta <secs>)"),
             (re.compile(r"(Total processing time: )\d+(?:\.\d+)? seconds"),
              r"\1<secs> seconds")]
NODE_LIST = re.compile(r"node\d\.example\.com(?:,node\d\.example\.com)+")
# A run of lines that are node names in an indented JSON list.
JSON_NODE_RUN = re.compile(r'(?m)(?:^ *"node\d\.example\.com",?\n)+')
VCS = re.compile(r"\((?:ganeti|ganeti-twisted)\) version [^\s\"',]+")
SERIALS = [
    re.compile(r"(\"serial_no\":\s*)\d+"),
    re.compile(r"(\bserial_no\b[:=]\s*)\d+"),
    re.compile(r"((?:Serial number|serial_no):\s*)\d+"),
]


def _ip_pattern(ips: dict[str, str]) -> re.Pattern[str]:
    alternatives = sorted(ips, key=len, reverse=True)
    return re.compile(r"(?<![\d.])(" + "|".join(re.escape(a) for a in alternatives)
                      + r")(?![\d])")


def normalise(text: str, side: Side, masks: tuple[str, ...] = ()) -> str:
    """``text`` (one side's stdout or stderr) with every rule above applied."""
    text = text.replace(side.files, "<FILES>").replace(side.dir, "<DIR>")
    if side.ips:
        text = _ip_pattern(side.ips).sub(lambda m: side.ips[m.group(1)], text)
    seen: dict[str, str] = {}

    def uuid_label(match: re.Match[str]) -> str:
        return seen.setdefault(match.group(0), f"<uuid:{len(seen) + 1}>")

    text = UUID.sub(uuid_label, text)
    for pattern in TIMES:
        text = pattern.sub("<time>", text)
    for pattern, replacement in DURATIONS:
        text = pattern.sub(replacement, text)
    text = VCS.sub("<vcs-version>", text)
    for pattern in SERIALS:
        text = pattern.sub(lambda m: m.group(1) + "<serial>", text)
    text = NODE_LIST.sub(lambda m: ",".join(sorted(m.group(0).split(","))), text)
    text = JSON_NODE_RUN.sub(_sort_json_run, text)
    for mask in masks:
        text = re.sub(mask, _mask_groups, text, flags=re.M)
    return text


def _sort_json_run(match: re.Match[str]) -> str:
    lines = match.group(0).splitlines()
    last_comma = lines[-1].endswith(",")
    names = sorted(line.rstrip(",") for line in lines)
    out = [name + "," for name in names[:-1]] + [names[-1] + ("," if last_comma else "")]
    return "\n".join(out) + "\n"


def _mask_groups(match: re.Match[str]) -> str:
    whole = match.group(0)
    if not match.re.groups:
        return "<masked>"
    start = match.start(0)
    out, pos = [], 0
    for k in range(1, match.re.groups + 1):
        if match.start(k) < 0:
            continue
        out.append(whole[pos:match.start(k) - start])
        out.append("<masked>")
        pos = match.end(k) - start
    out.append(whole[pos:])
    return "".join(out)

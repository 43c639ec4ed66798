"""Every difference between our daemons and real Ganeti 3.0 that the oracle accepts, each
with its reason (docs/compat.md lists them by group).

``REASONS`` (written by hand) maps a case id to why its difference stays; the exact
difference text (``-`` ours, ``+`` real) is recorded by record.py in
``recorded.DIFFS``; ``EXPECTED`` pairs them.  A case whose difference has no reason,
or differs from the recorded text, fails; a reason whose difference is gone is
reported (a warning) so that it can be removed.  Nothing is tolerated without a reason.
"""

from __future__ import annotations

import re

from tests.integration.oracle import recorded

# -- Ganeti contradicting its own man page: we follow the man page.
MAN_AUTOARCHIVE = ("man page followed: gnt-job(8) says 'autoarchive all' archives all "
                   "finished jobs; Ganeti 3.0's luxid archives none (age -1)")

# -- Parts not built yet.
EXT_QUERY_OS = ("extension: /2/query/os (and LUXI Query 'os') answer here; Ganeti's "
                "luxid answers them 500 and serves OS queries through OP_QUERY only")
NO_INSTANCES = ("not built yet: the instance operations, OS definitions and the opcodes "
                "that need them (OS diagnose, iallocator tests, disk repair, evacuation, "
                "migration)")
NO_INSTANCE_CHECKS = ("not built yet: cluster verify and cluster modify do not look at "
                      "instances yet (non-redundant instances, instance policy violations)")
NO_CONFIG_WARNINGS = ("not built yet: Ganeti verifies the whole config on every write and "
                      "prints 'Configuration data is not consistent: ...' as job feedback")

# -- Ganeti bugs: we do what Ganeti means.
GANETI_GROUP_EVACUATE = ("Ganeti bug: LUGroupEvacuate fails an assertion in DeclareLocks "
                         "(the evacuated group not among the locked ones), so the job ends "
                         "in an OpExecError without text; ours evacuates (here: 'There are "
                         "no possible target groups', one group only)")
GANETI_TEST_ALLOCATOR_IN = ("Ganeti bug: OP_TEST_ALLOCATOR's input text is bytes in Ganeti "
                            "3.0, so the job fails its result check ('Opcode result does not "
                            "match String'); ours answers the text (issue 29)")
GANETI_UUIDS = ("Ganeti bug: LUGroupRemove lists the group's nodes by UUID in its "
                "message; we name them")
GANETI_DISKPARAMS = ("Ganeti bug: luxid merges a group's disk parameters with the "
                     "cluster's one level deep only (a template the group sets hides every "
                     "cluster value for it; 'Disk parameters (merged)'); we merge per key as "
                     "Ganeti's FillDiskParams does. Ganeti's init also leaves the default "
                     "group's ctime 0; ours records it")
GANETI_500 = ("Ganeti bug: ganeti-rapi answers 500 (an unhandled exception) for this "
              "request; we answer 404 naming what is missing")
GANETI_502 = ("Ganeti quirk: luxid's request decoder refuses a bad query/filter, and "
              "ganeti-rapi passes that on as 502 'Invalid responses from another "
              "server/proxy'; we answer the caller's error as 400/404 (wrong_input)")
GANETI_FILTER_PARSE = ("Ganeti quirk: luxid refuses a bad filter rule while decoding the "
                       "request (protocol error; 502 through RAPI) with its Haskell decoder's "
                       "text; we refuse it as OpPrereqError wrong_input (exit 1; 400) naming "
                       "what is accepted")
GANETI_QFILTER = ("Ganeti quirk: luxid fails on '\"x\" in name' (a text field) with an "
                  "internal decode error; we refuse it as an invalid filter (wrong_input)")
HASKELL_WORDING = ("same stage and error class (refused while parsing the request); the "
                   "text of luxid's Haskell type decoder is not copied, ours names the "
                   "accepted values")

# -- Our extensions.
EXT_TAG = "extension: the tag error quotes the offending tag"
EXT_ROLES = "extension: the error lists the roles that can be set"
EXT_404 = "extension: the 404 names the filter rule that does not exist"

# -- Our differences, reported for fixing (small; listed in docs/compat.md).
OURS_FAILOVER = ("set-up, to check: the real client's master vote asks every node by "
                 "name; our vcluster's names do not resolve on the host (the real "
                 "cluster has a private /etc/hosts), so every node counts as unhealthy")
OURS_NODE_ADD = ("set-up: the real client resolves the new node's name itself before "
                 "asking the master; our vcluster's names do not resolve on the host")
OURS_QFILTER_FIELD = ("ours, to fix: an unknown field in a query filter is OpPrereqError "
                      "for us, ParameterError ('unknown/wrong parameter name') for Ganeti")
OURS_HV_DEFAULTS = ("ours: GetInfo lists every hypervisor's parameters as Ganeti, but our "
                    "libvirt-driven kvm knows a subset of Ganeti's kvm parameters and "
                    "boots from disk by default (kernel_path empty)")
OURS_RAPI_BODY = ("ours, to fix: wording of RAPI body parameter errors (Ganeti's opcode "
                  "validation text)")

REASONS: dict[str, str] = {
    "job-autoarchive-all": MAN_AUTOARCHIVE,
    # not built
    "cluster-repair-disk-sizes": NO_INSTANCES,
    "group-evacuate-default": GANETI_GROUP_EVACUATE,
    # node evacuation is served now: these two should agree once re-recorded
    "debug-iallocator-allocate-in": GANETI_TEST_ALLOCATOR_IN,
    # the job list holds that gnt-debug iallocator job: error there, success here
    "rapi-jobs-bulk": GANETI_TEST_ALLOCATOR_IN,
    "rapi-query-job": GANETI_TEST_ALLOCATOR_IN,
    "rapi-query-os": EXT_QUERY_OS,
    "cluster-verify": NO_INSTANCE_CHECKS,
    "cluster-verify-ignore-sysrq": NO_INSTANCE_CHECKS,
    "cluster-modify-ipolicy-disk-templates": NO_INSTANCE_CHECKS,
    "node-modify-demote-candidate": NO_CONFIG_WARNINGS,
    "node-modify-promote-candidate": NO_CONFIG_WARNINGS,
    # Ganeti bugs and quirks
    "group-remove-default": GANETI_UUIDS,
    "group-remove-nonempty": GANETI_UUIDS,
    "group-add-with-params": GANETI_DISKPARAMS,
    "group-modify-diskparams": GANETI_DISKPARAMS,
    "group-modify-ipolicy-std": GANETI_DISKPARAMS,
    "group-modify-ipolicy-bounds": GANETI_DISKPARAMS,
    "group-modify-ipolicy-disk-templates": GANETI_DISKPARAMS,
    "rapi-modify-group": GANETI_DISKPARAMS,
    "rapi-assign-group-nodes": GANETI_DISKPARAMS,
    "rapi-assign-group-nodes-back": GANETI_DISKPARAMS,
    "rapi-group": GANETI_DISKPARAMS,
    "rapi-groups-bulk": GANETI_DISKPARAMS,
    "rapi-node-role-unknown": GANETI_500,
    "rapi-instance-console": GANETI_500,
    "rapi-instance-tags": GANETI_500,
    "rapi-query-cluster": GANETI_500,
    "rapi-query-node-bad-filter": GANETI_502,
    "rapi-query-unknown-resource": GANETI_502,
    "filter-replace-rate-limit": GANETI_FILTER_PARSE,
    "filter-add-bad-action": GANETI_FILTER_PARSE,
    "filter-add-bad-predicate-name": GANETI_FILTER_PARSE,
    "filter-add-negative-priority": GANETI_FILTER_PARSE,
    "rapi-add-filter-bad-action": GANETI_FILTER_PARSE,
    "node-list-filter-in": GANETI_QFILTER,
    "cluster-modify-disk-templates-unknown": HASKELL_WORDING,
    "cluster-modify-hypervisors-unknown": HASKELL_WORDING,
    "group-add-bad-policy": HASKELL_WORDING,
    # extensions
    "cluster-add-tags-bad": EXT_TAG,
    "cluster-add-tags-too-long": EXT_TAG,
    "node-add-tags-bad": EXT_TAG,
    "rapi-set-node-role-master": EXT_ROLES,
    "rapi-set-node-role-bad": EXT_ROLES,
    "rapi-filter-unknown": EXT_404,
    # ours, reported for fixing
    "cluster-master-failover-on-master": OURS_FAILOVER,
    "node-add-existing": OURS_NODE_ADD,
    "node-add-readd-master": OURS_NODE_ADD,
    "node-list-filter-unknown-field": OURS_QFILTER_FIELD,
    "rapi-info": OURS_HV_DEFAULTS,
    "rapi-info-reason": OURS_HV_DEFAULTS,
    "rapi-modify-cluster-bad-param": OURS_RAPI_BODY,
    "rapi-modify-cluster-bad-type": OURS_RAPI_BODY,
}

EXPECTED: dict[str, tuple[str, str | re.Pattern[str]]] = {
    case_id: (reason, recorded.DIFFS[case_id])
    for case_id, reason in REASONS.items() if case_id in recorded.DIFFS
}

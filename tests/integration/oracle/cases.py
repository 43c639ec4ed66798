"""Every oracle case, in the order they run (the order matters: cases change state, and
each module leaves both clusters as it found them)."""

from __future__ import annotations

from tests.integration.oracle import (
    cases_cluster,
    cases_group,
    cases_instance,
    cases_jobs,
    cases_node,
    cases_rapi,
)
from tests.integration.oracle.model import Case

ALL: list[Case] = [
    *cases_cluster.CASES,
    *cases_node.CASES,
    *cases_group.CASES,
    *cases_jobs.CASES,
    *cases_instance.CASES,
    *cases_rapi.CASES,
]

"""Write ``recorded.py`` from an oracle run: ``python -m tests.integration.oracle.record
REPORT.json`` (the ``.json`` beside the file ``ORACLE_REPORT`` names).

``recorded.DIFFS`` holds the exact difference text of every case that has a reason in
``expected.REASONS``; ``expected.EXPECTED`` pairs the two.  A difference of a case
without a reason is not recorded: it is printed here (exit status 1), and the oracle
keeps failing on it until it is fixed or given a reason in ``expected.REASONS``.
A reason whose case showed no difference is printed too (its entry should go).
"""

from __future__ import annotations

import json
import os
import sys

from tests.integration.oracle import expected

HEADER = '''# ruff: noqa: E501
"""Differences recorded from an oracle run (written by record.py; do not edit by hand).

Each entry: case id -> the exact difference text (``-`` ours, ``+`` real); the reason
for each is in ``expected.REASONS``.
"""

from __future__ import annotations

'''


def main(argv: list[str]) -> int:
    with open(argv[1], encoding="utf-8") as f:
        run = json.load(f)
    lines = [HEADER, "DIFFS: dict[str, str] = {\n"]
    missing, gone = [], []
    for case_id, outcome in run.items():
        if not outcome["diff"]:
            if case_id in expected.REASONS:
                gone.append(case_id)
            continue
        if case_id not in expected.REASONS:
            missing.append(case_id)
            continue
        lines.append(f"    {case_id!r}:\n        {outcome['diff']!r},\n")
    lines.append("}\n")
    target = os.path.join(os.path.dirname(os.path.abspath(__file__)), "recorded.py")
    with open(target, "w", encoding="utf-8") as f:
        f.write("".join(lines))
    for case_id in gone:
        print(f"no difference any more (remove its reason): {case_id}", file=sys.stderr)
    for case_id in missing:
        print(f"difference without a reason (not recorded): {case_id}", file=sys.stderr)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

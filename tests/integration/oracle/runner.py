"""Running the cases on both sides and classifying the differences.

For each case, both sides run its steps at the same time (a thread each; each
side's steps in order, since cases change state), then the runner keeps the
job ids aligned: if one side's newest job id is lower (it made fewer jobs,
e.g. by refusing a command the other accepted), it gets short padding jobs, and
the padded ids are archived on both sides at once, so the next case's job ids
are the same on both sides, both list the same jobs, and job ids need no
normalisation.

A difference is a text: per step and stream, the exit codes or the lines only
one side printed (``-`` ours, ``+`` real, a zero-context unified diff).  It is
compared with ``expected.EXPECTED`` exactly (or by ``re.fullmatch`` when the
entry holds a pattern).
"""

from __future__ import annotations

import difflib
import json
import os
import re
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from tests.integration.oracle.model import Case
from tests.integration.oracle.normalise import normalise
from tests.integration.oracle.sides import Side

SAME, KNOWN, FIXED, CHANGED, NEW = ("same", "known", "fixed", "changed", "new")
FAILING = (CHANGED, NEW)


@dataclass
class Outcome:
    case: Case
    ours: list[dict] = field(default_factory=list)
    real: list[dict] = field(default_factory=list)
    diff: str = ""
    status: str = SAME
    reason: str = ""
    padded: tuple[int, int] = (0, 0)
    secs: tuple[float, float] = (0.0, 0.0)


def run_side(side: Side, case: Case) -> tuple[list[dict], float]:
    """Run a case's steps on one side; normalised results and the seconds taken."""
    start = time.monotonic()
    for name, text in case.files.items():
        with open(os.path.join(side.files, name), "w", encoding="utf-8") as f:
            f.write(side.expand(text))
    results = []
    for k, (kind, payload) in enumerate(case.steps):
        if kind == "cli":
            raw = side.run(payload, stdin=case.stdin if k == 0 else None,
                           timeout=case.timeout)
        else:
            raw = side.rapi(payload, timeout=case.timeout)
        if "error" in raw:
            raw = {"rc": -1, "stdout": "", "stderr": f"HARNESS: {raw['error']}"}
        result = {"rc": raw["rc"]}
        for stream in ("stdout", "stderr"):
            text = normalise(raw[stream], side, case.masks)
            if case.unordered:  # (a JSON list's commas follow the order: dropped)
                text = "".join(sorted(line.rstrip(",") + "\n" for line in text.splitlines()))
            result[stream] = text
        results.append(result)
    return results, time.monotonic() - start


def difference(ours: list[dict], real: list[dict]) -> str:
    """The difference text of two sides' normalised results ("" when equal)."""
    lines: list[str] = []
    for k, (a, b) in enumerate(zip(ours, real, strict=True)):
        if a["rc"] != b["rc"]:
            lines.append(f"step {k} rc: ours {a['rc']}, real {b['rc']}")
        for stream in ("stdout", "stderr"):
            if a[stream] == b[stream]:
                continue
            lines.append(f"step {k} {stream}:")
            for line in difflib.unified_diff(a[stream].splitlines(), b[stream].splitlines(),
                                             lineterm="", n=0):
                if line.startswith(("---", "+++", "@@")):
                    continue
                lines.append(line)
    return "\n".join(lines)


def matches(entry_diff: str | re.Pattern[str], diff: str) -> bool:
    if isinstance(entry_diff, re.Pattern):
        return entry_diff.fullmatch(diff) is not None
    return entry_diff.strip("\n") == diff


def classify(outcome: Outcome, expected: dict) -> None:
    """SAME, KNOWN (the difference ``expected`` holds, with its reason), FIXED (an
    expected difference is gone), CHANGED (it has another text) or NEW."""
    case_id, diff = outcome.case.id, outcome.diff
    entry = expected.get(case_id)
    if entry is None:
        outcome.status = NEW if diff else SAME
    elif not diff:
        outcome.status, outcome.reason = FIXED, entry[0]
    elif matches(entry[1], diff):
        outcome.status, outcome.reason = KNOWN, entry[0]
    else:
        outcome.status, outcome.reason = CHANGED, entry[0]


def align_jobs(ours: Side, real: Any, pool: ThreadPoolExecutor | None = None,
               ) -> tuple[int, int]:
    """Pad the side with the lower newest job id; (jobs added to ours, to real).

    The padded ids are then archived on both sides (padding jobs on one, the jobs
    they stand in for on the other), so that both sides list the same job ids.
    With ``pool``, both sides are asked for their newest job id at the same time."""
    if pool is None:
        a, b = ours.query_max_job(), real.query_max_job()
    else:
        f_ours, f_real = pool.submit(ours.query_max_job), pool.submit(real.query_max_job)
        a, b = f_ours.result(), f_real.result()
    if a == b:
        return 0, 0
    padded = (ours.pad_jobs(b), 0) if a < b else (0, real.pad_jobs(a))
    for side in (ours, real):
        side.archive(min(a, b) + 1, max(a, b))
    return padded


def run_all(cases: list[Case], ours: Side, real: Any, expected: dict) -> list[Outcome]:
    """Every case on both sides; ``real`` is a live side, a ``replay.Recorder`` around
    one, or a ``replay.ReplaySide`` (its recorded results, none run)."""
    outcomes = []
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="oracle") as pool:
        align_jobs(ours, real)
        for side in (ours, real):  # both queues start empty (ids stay aligned)
            side.archive_all()
        for case in cases:
            f_ours = pool.submit(run_side, ours, case)
            if hasattr(real, "recorded_results"):  # replay.ReplaySide
                r_ours, t_ours = _result(f_ours, case)
                r_real, t_real = real.recorded_results(case.id), 0.0
            else:
                f_real = pool.submit(run_side, real, case)
                (r_ours, t_ours), (r_real, t_real) = (_result(f_ours, case),
                                                      _result(f_real, case))
                if hasattr(real, "case_done"):  # replay.Recorder
                    real.case_done(case.id, r_real)
            outcome = Outcome(case, r_ours, r_real, difference(r_ours, r_real),
                              secs=(t_ours, t_real))
            classify(outcome, expected)
            outcome.padded = align_jobs(ours, real, pool)
            if case.archive_after:
                for side in (ours, real):
                    side.archive_all()
            outcomes.append(outcome)
    return outcomes


def _result(future: Future, case: Case) -> tuple[list[dict], float]:
    """A side's results; a harness failure becomes a result every step shares."""
    try:
        return future.result()
    except (AssertionError, OSError, ValueError) as err:
        failed = {"rc": -1, "stdout": "", "stderr": f"HARNESS: {type(err).__name__}: {err}"}
        return [dict(failed) for _ in case.steps], 0.0


def describe_step(kind: str, payload: list) -> str:
    if kind == "cli":
        return " ".join(payload)
    return "RAPI " + "; ".join(f"{c[0]}{tuple(c[1])}{c[2] or ''}" for c in payload)


def report(outcomes: list[Outcome], path: str, timing: dict[str, float],
           notes: str = "") -> None:
    """Write every difference (and both outputs) to ``path`` for triage, and each case's
    status, difference and seconds to ``path.json`` (the input of record.py)."""
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
    with open(path + ".json", "w", encoding="utf-8") as f:
        json.dump({o.case.id: {"status": o.status, "diff": o.diff, "reason": o.reason,
                               "secs": [round(t, 2) for t in o.secs]} for o in outcomes},
                  f, indent=1)
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"# oracle: {len(outcomes)} cases; {counts}; timing {timing}\n")
        if notes:
            f.write(f"# {notes}\n")
        slowest = sorted(outcomes, key=lambda o: -max(o.secs))[:25]
        f.write("# slowest (ours s, real s): " + ", ".join(
            f"{o.case.id} ({o.secs[0]:.1f}, {o.secs[1]:.1f})" for o in slowest) + "\n\n")
        for o in outcomes:
            if o.status == SAME:
                continue
            f.write(f"## {o.case.id}  [{o.status}]" + (f"  ({o.reason})" if o.reason else "")
                    + "\n")
            if o.padded != (0, 0):
                f.write(f"padding jobs after it: ours {o.padded[0]}, real {o.padded[1]}\n")
            f.write("### difference (ours -, real +)\n" + o.diff + "\n")
            for k, (kind, payload) in enumerate(o.case.steps):
                f.write(f"### step {k}: {describe_step(kind, payload)}\n")
                for side, results in (("ours", o.ours), ("real", o.real)):
                    r = results[k]
                    f.write(f"#### {side}: rc {r['rc']}\n--- stdout\n{r['stdout']}"
                            f"--- stderr\n{r['stderr']}\n")
            f.write("\n")

"""What a case is, and the short constructors the case modules use."""

from __future__ import annotations

from dataclasses import dataclass, field

# A step is ("cli", argv) or ("rapi", [[method, args, kwargs], ...]).
Step = tuple[str, list]


@dataclass(frozen=True)
class Case:
    """One command run on both sides, then its read-back commands.

    Every step's exit code, stdout and stderr are compared after normalisation.
    ``masks`` are regexes of host-dependent values (see normalise.py, rule 7);
    ``files`` are written into each side's files directory first (``{files}`` in
    an argv names that directory); ``stdin`` is fed to the first step;
    ``unordered`` sorts every step's output lines (normalise.py, rule 8);
    ``archive_after`` archives every job on both sides after the case (runner.py),
    when the case left the two queues different on purpose.
    """

    id: str
    steps: tuple[Step, ...]
    masks: tuple[str, ...] = ()
    files: dict[str, str] = field(default_factory=dict)
    stdin: str | None = None
    timeout: int = 30
    unordered: bool = False
    archive_after: bool = False


def cli(case_id: str, *argv: str, then: tuple = (), masks: tuple[str, ...] = (),
        files: dict[str, str] | None = None, stdin: str | None = None,
        timeout: int = 30, unordered: bool = False, archive_after: bool = False) -> Case:
    """A case running one real client command; ``then`` holds read-back argvs
    (lists of strings) or RAPI steps (from :func:`rapi_step`)."""
    steps: list[Step] = [("cli", list(argv)), *(_step(extra) for extra in then)]
    return Case(case_id, tuple(steps), masks, dict(files or {}), stdin, timeout, unordered,
                archive_after)


def _step(extra: tuple | list) -> Step:
    """A read-back: a step from :func:`rapi_step`, or an argv (tuple or list of strings)."""
    if len(extra) == 2 and extra[0] in ("cli", "rapi") and isinstance(extra[1], list):
        return (extra[0], extra[1])
    return ("cli", list(extra))


def call(name: str, *args: object, **kwargs: object) -> list:
    """One RAPI client call; ``"$N"`` in args is the outcome of call N of the step."""
    return [name, list(args), kwargs]


def rapi_step(*calls: list) -> Step:
    return ("rapi", list(calls))


def rapi(case_id: str, *calls: list, then: tuple = (), masks: tuple[str, ...] = (),
         unordered: bool = False) -> Case:
    """A case running RAPI client calls in one client process."""
    steps: list[Step] = [rapi_step(*calls), *(_step(extra) for extra in then)]
    return Case(case_id, tuple(steps), masks, unordered=unordered)

"""JSON as Ganeti writes it: UTF-8, deterministic key order; bounded parsing.

Every JSON edge (LUXI frames, RAPI bodies, feed messages, confd datagrams,
node RPC bodies, files read back) parses through :func:`load_json`, which
refuses text nested deeper than :data:`MAX_JSON_DEPTH` with
:class:`JsonTooDeep` (a :class:`ValueError`, like any other malformed JSON),
before the parser or any code walking the result could exhaust the stack.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

#: The deepest nesting of arrays and objects accepted from outside.  Ganeti's
#: own documents (config.data, jobs, opcodes, query filters) stay below 20.
MAX_JSON_DEPTH = 100

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_RUNS = re.compile(r"\[+|\]+")
_STRIP_PASSES = 8


class _BracketsOnly(dict[int, str | None]):
    """A ``str.translate`` table keeping brackets (as ``[``/``]``) and dropping the rest."""

    def __missing__(self, key: int) -> None:
        return None


_BRACKETS = _BracketsOnly({ord("["): "[", ord("{"): "[", ord("]"): "]", ord("}"): "]"})


class JsonTooDeep(ValueError):
    """JSON text nested deeper than allowed."""


def dump_json(data: Any, pretty: bool = False) -> str:
    """Serialise ``data``; keys sorted so equal data gives equal text."""
    if pretty:
        return json.dumps(data, sort_keys=True, indent=2) + "\n"
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def _skeleton_depth_over(skeleton: str, max_depth: int) -> bool:
    """Whether a skeleton of ``[``/``]`` nests deeper than ``max_depth``, in linear time.

    A run of more than ``max_depth`` opening brackets settles it at once.
    Otherwise a few passes strip the innermost pairs (each pass lowers the
    depth by exactly one and leaves at most a fraction of the runs), then the
    depth is the largest prefix sum over the alternating runs that remain.
    Unbalanced brackets are left to the parser to report.
    """
    if "[" * (max_depth + 1) in skeleton:
        return True
    stripped_levels = 0
    for _ in range(_STRIP_PASSES):
        stripped = skeleton.replace("[]", "")
        if stripped == skeleton:
            break
        skeleton = stripped
        stripped_levels += 1
        if not skeleton:
            return stripped_levels > max_depth
    runs = [len(run) for run in _RUNS.findall(skeleton)]
    if not runs:
        return stripped_levels > max_depth
    first = 0 if skeleton[0] == "[" else 1  # runs alternate: opening, closing, ...
    runs[1 - first::2] = [-n for n in runs[1 - first::2]]
    return max(itertools.accumulate(runs)) + stripped_levels > max_depth


def check_depth(text: str, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise :class:`JsonTooDeep` if ``text`` nests deeper than ``max_depth``.

    Cheap for ordinary input (about a tenth of the parse): text with at most
    ``max_depth`` opening brackets cannot be too deep; otherwise the
    brackets alone are checked, and only if they nest too deep are the
    brackets inside strings (which cannot nest anything) taken out and the
    check repeated.
    """
    if text.count("[") + text.count("{") <= max_depth:
        return
    if not _skeleton_depth_over(text.translate(_BRACKETS), max_depth):
        return
    if _skeleton_depth_over(_STRING.sub("", text).translate(_BRACKETS), max_depth):
        raise JsonTooDeep(f"JSON nested more than {max_depth} levels deep")


def load_json(text: str | bytes, max_depth: int = MAX_JSON_DEPTH, **kwargs: Any) -> Any:
    """Parse JSON text (bytes are decoded as UTF-8), nesting bounded by ``max_depth``.

    Raises :class:`ValueError` for anything that is not valid JSON within
    the bound (:class:`JsonTooDeep` for too deep, :class:`UnicodeDecodeError`
    for bad UTF-8); ``kwargs`` go to :func:`json.loads`.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    check_depth(text, max_depth)
    try:
        return json.loads(text, **kwargs)
    except RecursionError:  # a bound above the interpreter's own limit
        raise JsonTooDeep("JSON nested too deeply") from None

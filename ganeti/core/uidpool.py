"""The user-id pool (docs/design/config-and-paths.md): parse, check and format uid ranges."""

from __future__ import annotations

from collections.abc import Sequence

from ganeti.core import constants
from ganeti.core.errors import ECODE_INVAL, OpPrereqError

UidRange = tuple[int, int]


def parse(value: str, separator: str = ",") -> list[UidRange]:
    """Parse ``"1000-1009,2000"`` into sorted inclusive ranges.

    Each part is a uid or ``low-high``; empty parts are skipped.  Ranges are
    not merged and not range-checked here: :func:`check` does that.
    """
    ranges: list[UidRange] = []
    for part in value.split(separator):
        part = part.strip()
        if not part:
            continue
        bounds = part.split("-")
        if len(bounds) > 2:
            raise OpPrereqError(f"Invalid user-id range definition: {part!r}", ECODE_INVAL)
        try:
            low = int(bounds[0])
            high = int(bounds[-1])
        except ValueError:
            raise OpPrereqError(f"Invalid user-id value in {part!r}: not an integer",
                                ECODE_INVAL) from None
        ranges.append((low, high))
    return sorted(ranges)


def check(ranges: Sequence[Sequence[int]]) -> None:
    """Refuse ranges that are reversed or outside the valid uid space (Ganeti's words)."""
    for low, high in ranges:
        if low > high:
            raise OpPrereqError(f"Lower user-id range boundary value ({low}) is larger than "
                                f"higher boundary value ({high})", ECODE_INVAL)
        if low < constants.UIDPOOL_UID_MIN:
            raise OpPrereqError(f"Lower user-id range boundary value ({low}) is smaller "
                                f"than UIDPOOL_UID_MIN ({constants.UIDPOOL_UID_MIN}).",
                                ECODE_INVAL)
        if high > constants.UIDPOOL_UID_MAX:
            raise OpPrereqError(f"Higher user-id boundary value ({high}) is larger than "
                                f"UIDPOOL_UID_MAX ({constants.UIDPOOL_UID_MAX}).",
                                ECODE_INVAL)


def format_pool(ranges: list[UidRange] | list[list[int]], separator: str = ", ") -> str:
    """Format ranges the way ``parse`` reads them back."""
    return separator.join(str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in ranges)

"""Parsing and type-checking of parameter dictionaries (hv, be, nic, nd params).

Command-line options give ``key=value,key=value`` text; the declared defaults
tell each key's type.  Unknown keys and badly typed values are refused with
an ``OpPrereqError`` naming the key.
"""

from __future__ import annotations

import re
from typing import Any

from ganeti.core.errors import ECODE_INVAL, OpPrereqError

_UNITS = {"m": 1, "g": 1024, "t": 1024 * 1024}
_TRUE = {"true", "yes", "y", "1", "on"}
_FALSE = {"false", "no", "n", "0", "off"}


def parse_unit(value: str) -> int:
    """A size in MiB from ``512``, ``512M``, ``2G`` or ``1.5T``."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([mMgGtT]?)[iI]?[bB]?\s*", value)
    if not m:
        raise OpPrereqError(f"Invalid size {value!r}: use a number with an optional "
                            "M, G or T suffix", ECODE_INVAL)
    number = float(m.group(1)) * _UNITS[(m.group(2) or "m").lower()]
    return int(number + 0.5) if number != int(number) else int(number)


def parse_keyval(text: str, where: str) -> dict[str, str]:
    """Split ``a=1,b=2`` into a dict; ``no_key``/``-key`` forms mean False/reset."""
    result: dict[str, str] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "=" in part:
            key, value = part.split("=", 1)
        elif part.startswith("no_"):
            key, value = part[3:], "false"
        else:
            key, value = part, "true"
        key = key.strip()
        if not key:
            raise OpPrereqError(f"{where}: empty parameter name in {text!r}", ECODE_INVAL)
        if key in result:
            raise OpPrereqError(f"{where}: parameter {key!r} given twice", ECODE_INVAL)
        result[key] = value
    return result


def coerce(key: str, value: Any, default: Any, where: str, sizes: frozenset[str]) -> Any:
    """Convert ``value`` to the type of ``default`` (sizes accept units)."""
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        text = str(value).lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise OpPrereqError(f"{where}: {key} must be a boolean, not {value!r}", ECODE_INVAL)
    if isinstance(default, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if key in sizes:
            return parse_unit(str(value))
        try:
            return int(str(value))
        except ValueError:
            raise OpPrereqError(f"{where}: {key} must be an integer, not {value!r}",
                                ECODE_INVAL) from None
    if isinstance(default, float):
        try:
            return float(value)
        except (TypeError, ValueError):
            raise OpPrereqError(f"{where}: {key} must be a number, not {value!r}",
                                ECODE_INVAL) from None
    return str(value)


def check_params(given: dict[str, Any], defaults: dict[str, Any], where: str,
                 sizes: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Type-check ``given`` against the keys and types of ``defaults``."""
    result: dict[str, Any] = {}
    for key, value in given.items():
        if key not in defaults:
            known = ", ".join(sorted(defaults)) or "none"
            raise OpPrereqError(f"{where}: unknown parameter {key!r} (known: {known})",
                                ECODE_INVAL)
        result[key] = coerce(key, value, defaults[key], where, sizes)
    return result

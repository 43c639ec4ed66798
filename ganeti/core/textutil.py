"""Text shown to people: escaped as Ganeti escapes it."""

from __future__ import annotations


def safe_encode(text: str) -> str:
    """Output as Ganeti shows it: ASCII only, newlines and tabs as ``\\n`` and ``\\t``.

    Non-ASCII characters become backslash escapes, other control characters
    ``\\xNN``; a carriage return becomes ``\\'r``, exactly as Ganeti 3.0 writes it.
    """
    text = text.encode("ascii", "backslashreplace").decode("ascii")
    out: list[str] = []
    for char in text:
        code = ord(char)
        if char == "\t":
            out.append("\\t")
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\'r")
        elif code < 32 or code >= 127:
            out.append(f"\\x{code & 0xff:02x}")
        else:
            out.append(char)
    return "".join(out)


def format_seconds(secs: float) -> str:
    """Seconds for reading, as Ganeti's ``FormatSeconds``: ``"2d 9h 19m 49s"``."""
    parts: list[str] = []
    left = round(secs, 0)
    if left > 0:
        for unit, one in (("d", 86400), ("h", 3600), ("m", 60)):
            complete, left = divmod(left, one)
            if complete or parts:
                parts.append(f"{int(complete)}{unit}")
    parts.append(f"{int(left)}s")
    return " ".join(parts)

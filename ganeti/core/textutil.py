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

r"""The text syntax of query filters, and the command-line rules that pick it.

``parse_filter`` turns the syntax administrators type into the JSON form of
:mod:`ganeti.core.qlang.jsonform`, with the meaning real Ganeti gives it::

    status == "success" and id > 3      ["&", ["==", "status", "success"], [">", "id", 3]]
    master_candidate                    ["?", "master_candidate"]
    "web" in tags                       ["=[]", "tags", "web"]
    name =~ m/^node[12]/i               ["=~", "name", "(?i)^node[12]"]
    name =* "node?.example.*"           ["=~", "name", "^node[^.]\\.example\\.[^.]*(\\..*)?$"]

``make_filter`` is the rule of the ``gnt-*`` list commands (Ganeti's
``MakeFilter``): one argument that looks like an expression is parsed,
other arguments are names or glob patterns.  ``render`` writes a filter
back as text.  Where this parser deliberately differs from Ganeti's it is
said in ``docs/qlang.md``; every error is ``OpPrereqError(..., "wrong_input")``
naming the column where the text stops making sense.

The parser is a small on-demand tokenizer and a recursive descent over
``or`` > ``and`` > ``not`` > conditions.  Regular expressions are read by
the tokenizer only right after ``=~`` or ``!~``, where a ``/`` cannot mean
anything else.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ganeti.core import constants as c
from ganeti.core.errors import ECODE_INVAL, OpPrereqError
from ganeti.core.qlang.jsonform import MAX_DEPTH, check_filter

#: A command-line argument holding any of these is a filter expression, not a
#: name (Ganeti's QLANG_FILTER_DETECTION_CHARS).
FILTER_DETECTION_CHARS = frozenset("\t\n\v\f\r !\"'()/<=>\\~")

#: A name holding any of these is a glob pattern (QLANG_GLOB_DETECTION_CHARS).
GLOB_DETECTION_CHARS = frozenset("*?")

#: Characters that may open and close a regular expression, in the order
#: :func:`render` tries them.
REGEXP_DELIMITERS = "/#^|"

#: Flags allowed after a regular expression: ``s`` (dot matches newline),
#: ``i`` (ignore case).
REGEXP_FLAGS = frozenset("si")

#: Words that are operators and never field names.
KEYWORDS = frozenset({"and", "or", "not", "in"})

_WHITESPACE = " \t\n\r"  # what Ganeti's grammar skips between tokens
_LETTERS = frozenset(string.ascii_letters)
_DIGITS = frozenset(string.digits)
_HEX_DIGITS = frozenset(string.hexdigits)
_FIELD_CHARS = _LETTERS | _DIGITS | frozenset("_/.")
_FIELD_RE = re.compile(r"[A-Za-z][A-Za-z0-9_/.]*\Z")
_OPERATOR_CHARS = frozenset("=!<>~*")

#: text operator -> JSON operator (``=`` is the old spelling of ``==``)
_COMPARISONS = {
    "==": c.QLANG_OP_EQUAL, "=": c.QLANG_OP_EQUAL, "!=": c.QLANG_OP_NOT_EQUAL,
    "<": c.QLANG_OP_LT, "<=": c.QLANG_OP_LE, ">": c.QLANG_OP_GT, ">=": c.QLANG_OP_GE,
}
#: regular expression and glob operators -> whether they negate
_REGEXP_OPS = {"=~": False, "!~": True}
_GLOB_OPS = {"=*": False, "!*": True}
_OPERATORS = frozenset(_COMPARISONS) | frozenset(_REGEXP_OPS) | frozenset(_GLOB_OPS)

#: Inside a regular expression these escapes become control characters
#: before every other backslash is dropped (as in Ganeti's grammar).
_REGEXP_CONTROL_ESCAPES = (("\\t", "\t"), ("\\n", "\n"), ("\\f", "\f"), ("\\r", "\r"))
_REGEXP_ESCAPE = re.compile(r"\\(.)")


class _SyntaxError(Exception):
    """Where (offset) and why the text is not a filter."""

    def __init__(self, pos: int, message: str) -> None:
        super().__init__(pos, message)
        self.pos = pos
        self.message = message


@dataclass(frozen=True)
class _Token:
    kind: str  # "word", "number", "string", "op", "(", ")", "end"
    text: str  # as written
    pos: int
    value: Any = None
    glued: bool = False  # follows a number without whitespace


def _show(token: _Token) -> str:
    if token.kind == "end":
        return "the end of the filter"
    text = token.text if len(token.text) <= 30 else token.text[:27] + "..."
    return repr(text)


# --- literals -----------------------------------------------------------------

def _scan_string(text: str, start: int) -> tuple[str, int]:
    """The quoted string at ``start``: (contents, end offset).

    As in Ganeti the contents are taken as written, without unescaping:
    a backslash keeps the next character (``\\x`` needs hex digits) and a
    doubled quote stays doubled; a string ends on its line.
    """
    quote = text[start]
    pos = start + 1
    while pos < len(text):
        ch = text[pos]
        if ch == quote:
            if text.startswith(quote, pos + 1):
                pos += 2
                continue
            return text[start + 1:pos], pos + 1
        if ch in "\n\r":
            break
        if ch == "\\":
            nxt = text[pos + 1:pos + 2]
            if nxt == "x":
                end = pos + 2
                while end < len(text) and text[end] in _HEX_DIGITS:
                    end += 1
                if end == pos + 2:
                    raise _SyntaxError(pos, "'\\x' in a string needs hexadecimal digits")
                pos = end
                continue
            if not nxt:
                break
            pos += 2
            continue
        pos += 1
    raise _SyntaxError(start, f"unterminated string: no closing {quote} on the same line")


def _decode_regexp_body(raw: str) -> str:
    """A regular expression as written between its delimiters, as Ganeti reads it:
    ``\\t``, ``\\n``, ``\\f``, ``\\r`` become control characters, then a backslash
    is dropped before any other character (``\\/`` is ``/``, ``\\\\`` is ``\\``)."""
    for escape, char in _REGEXP_CONTROL_ESCAPES:
        raw = raw.replace(escape, char)
    return _REGEXP_ESCAPE.sub(r"\1", raw)


def _scan_regexp_body(text: str, start: int) -> tuple[str, int]:
    """The delimited regular expression at ``start``: (decoded body, end offset)."""
    delimiter = text[start]
    pos = start + 1
    while pos < len(text):
        ch = text[pos]
        if ch == delimiter:
            return _decode_regexp_body(text[start + 1:pos]), pos + 1
        if ch in "\n\r":
            break
        if ch == "\\":
            if text[pos + 1:pos + 2] in ("", "\n"):
                break
            pos += 2
            continue
        pos += 1
    raise _SyntaxError(start, f"unterminated regular expression: no closing {delimiter} "
                              "on the same line")


def glob_pattern(pattern: str) -> str:
    """The regular expression of a DNS-name glob (Ganeti's ``DnsNameGlobPattern``).

    ``*`` matches any characters but the dot, ``?`` one character but the
    dot; the pattern is anchored at the start and matches the name alone
    or followed by more domain parts: ``node?`` matches
    ``node1.example.com`` but not ``node12``.
    """
    body = "".join("[^.]*" if part == "*" else "[^.]" if part == "?" else re.escape(part)
                   for part in re.findall(r"\*|\?|[^*?]+", pattern))
    return rf"^{body}(\..*)?$"


# --- tokens -------------------------------------------------------------------

class _Lexer:
    """Tokens on demand; :meth:`regexp` reads a regular expression instead."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.ahead: _Token | None = None
        self.last_kind = "start"
        self.after_regexp = False  # the previous token was a regular expression

    def _skip_space(self) -> bool:
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] in _WHITESPACE:
            self.pos += 1
        return self.pos > start

    def peek(self) -> _Token:
        if self.ahead is None:
            self.ahead = self._read()
        return self.ahead

    def next(self) -> _Token:
        token = self.peek()
        self.ahead = None
        self.last_kind = token.kind
        self.after_regexp = False
        return token

    def _read(self) -> _Token:
        spaced = self._skip_space()
        glued = not spaced and self.last_kind == "number"
        text, start = self.text, self.pos
        if start >= len(text):
            return _Token("end", "", start)
        ch = text[start]
        if ch in "()":
            self.pos += 1
            return _Token(ch, ch, start)
        if ch in "\"'":
            value, self.pos = _scan_string(text, start)
            return _Token("string", text[start:self.pos], start, value)
        if ch in _LETTERS:
            end = start + 1
            while end < len(text) and text[end] in _FIELD_CHARS:
                end += 1
            self.pos = end
            return _Token("word", text[start:end], start, glued=glued)
        if ch in _DIGITS or (ch in "+-" and text[start + 1:start + 2] in _DIGITS):
            end = start + 1
            while end < len(text) and text[end] in _DIGITS:
                end += 1
            try:
                number = int(text[start:end])
            except ValueError:  # beyond Python's limit on digits
                raise _SyntaxError(start, "number too long") from None
            self.pos = end
            return _Token("number", text[start:end], start, number)
        if ch in _OPERATOR_CHARS:
            end = start + 1
            while end < len(text) and text[end] in _OPERATOR_CHARS:
                end += 1
            op = text[start:end]
            if op not in _OPERATORS:
                raise _SyntaxError(start, f"unknown operator {op!r}")
            self.pos = end
            return _Token("op", op, start)
        raise _SyntaxError(start, f"unexpected character {ch!r}")

    def regexp(self, after: str) -> str:
        """The regular expression after ``=~``/``!~``: ``[m]/body/flags``, with the
        flags written directly after the closing delimiter."""
        assert self.ahead is None, "a token was read past the operator"
        self._skip_space()
        text, start = self.text, self.pos
        pos = start
        if text[pos:pos + 1] == "m":
            pos += 1
            while pos < len(text) and text[pos] in _WHITESPACE:
                pos += 1
        if text[pos:pos + 1] == "" or text[pos] not in REGEXP_DELIMITERS:
            found = "the end of the filter" if start >= len(text) else repr(text[start])
            raise _SyntaxError(start, f"expected a regular expression such as /text/ after "
                                      f"{after!r}, found {found}")
        body, pos = _scan_regexp_body(text, pos)
        flags_start = pos
        while pos < len(text) and text[pos] in _LETTERS:
            pos += 1
        flags = text[flags_start:pos]
        unknown = sorted(set(flags) - REGEXP_FLAGS)
        if unknown:
            raise _SyntaxError(flags_start, f"unknown regular expression flag(s) "
                                            f"{''.join(unknown)!r} (known: i, s)")
        if flags:
            body = f"(?{''.join(sorted(flags))})" + body
        try:
            re.compile(body)
        except re.error as err:
            raise _SyntaxError(start, f"invalid regular expression {body!r}: {err}") from None
        self.pos = pos
        self.last_kind = "regexp"
        self.after_regexp = True
        return body


# --- grammar ------------------------------------------------------------------

class _Parser:
    def __init__(self, text: str) -> None:
        self.lexer = _Lexer(text)
        self.depth = 0

    def parse(self) -> list[Any]:
        if not self.lexer.text.strip(_WHITESPACE):
            raise _SyntaxError(0, "the filter is empty")
        result = self.disjunction()
        token = self.lexer.peek()
        if token.kind == ")":
            raise _SyntaxError(token.pos, "')' without a matching '('")
        if token.kind != "end":
            hint = ""
            if (self.lexer.after_regexp and token.kind == "word"
                    and token.text not in KEYWORDS):
                hint = " (regular expression flags go directly after the closing delimiter)"
            raise _SyntaxError(token.pos, f"expected 'and', 'or' or the end of the filter, "
                                          f"found {_show(token)}{hint}")
        return result

    def _word(self, word: str) -> bool:
        token = self.lexer.peek()
        return token.kind == "word" and token.text == word

    def _keyword(self, word: str) -> bool:
        """Whether ``word`` comes next as an operator (not glued to a number)."""
        if not self._word(word):
            return False
        token = self.lexer.peek()
        if token.glued:
            raise _SyntaxError(token.pos, f"expected a space between the number and {word!r}")
        return True

    def _nest(self, token: _Token) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _SyntaxError(token.pos, f"nested more than {MAX_DEPTH} levels deep")

    def _logic(self, op: str, word: str, operand: Callable[[], list[Any]]) -> list[Any]:
        items = [operand()]
        while self._keyword(word):
            self.lexer.next()
            items.append(operand())
        return items[0] if len(items) == 1 else [op, *items]

    def disjunction(self) -> list[Any]:
        return self._logic(c.QLANG_OP_OR, "or", self.conjunction)

    def conjunction(self) -> list[Any]:
        return self._logic(c.QLANG_OP_AND, "and", self.negation)

    def negation(self) -> list[Any]:
        if not self._keyword("not"):
            return self.condition()
        self._nest(self.lexer.next())
        operand = self.negation()
        self.depth -= 1
        return [c.QLANG_OP_NOT, operand]

    def condition(self) -> list[Any]:
        token = self.lexer.peek()
        if token.kind == "(":
            self._nest(self.lexer.next())
            inner = self.disjunction()
            closing = self.lexer.peek()
            if closing.kind != ")":
                raise _SyntaxError(closing.pos, f"expected ')' to close the '(' at "
                                                f"{_where(self.lexer.text, token.pos)}, "
                                                f"found {_show(closing)}")
            self.lexer.next()
            self.depth -= 1
            return inner
        if token.kind == "word" and token.text not in KEYWORDS:
            return self.field_condition(self.lexer.next().text)
        if token.kind in ("number", "string"):
            return self.in_condition(self.lexer.next())
        hint = ""
        if token.kind == "word":
            hint = " (and, or, not and in are operators, never field names)"
        raise _SyntaxError(token.pos, f"expected a condition (a field name, a value before "
                                      f"'in', 'not' or '('), found {_show(token)}{hint}")

    def field_condition(self, field: str) -> list[Any]:
        token = self.lexer.peek()
        if token.kind != "op":
            return [c.QLANG_OP_TRUE, field]
        op = self.lexer.next().text
        if op in _REGEXP_OPS:
            result: list[Any] = [c.QLANG_OP_REGEXP, field, self.lexer.regexp(op)]
            return [c.QLANG_OP_NOT, result] if _REGEXP_OPS[op] else result
        value = self.lexer.peek()
        if op in _GLOB_OPS:
            if value.kind != "string":
                raise _SyntaxError(value.pos, f"expected a quoted glob pattern after {op!r}, "
                                              f"found {_show(value)}")
            self.lexer.next()
            result = [c.QLANG_OP_REGEXP, field, glob_pattern(value.value)]
            return [c.QLANG_OP_NOT, result] if _GLOB_OPS[op] else result
        if value.kind not in ("number", "string"):
            raise _SyntaxError(value.pos, f"expected a value (a number or a quoted string) "
                                          f"after {op!r}, found {_show(value)}")
        self.lexer.next()
        return [_COMPARISONS[op], field, value.value]

    def in_condition(self, value: _Token) -> list[Any]:
        # "not in" may follow a number directly ("1not in f"), as in Ganeti
        negate = self._word("not")
        if negate:
            self.lexer.next()
        token = self.lexer.peek()
        if not self._word("in"):
            expected = "'in'" if negate else "'in' or 'not in'"
            raise _SyntaxError(token.pos, f"expected {expected} after the value "
                                          f"{value.text}, found {_show(token)}")
        self.lexer.next()
        field = self.lexer.peek()
        if field.kind != "word" or field.text in KEYWORDS:
            raise _SyntaxError(field.pos, f"expected a field name after 'in', "
                                          f"found {_show(field)}")
        self.lexer.next()
        result = [c.QLANG_OP_CONTAINS, field.text, value.value]
        return [c.QLANG_OP_NOT, result] if negate else result


def _where(text: str, pos: int) -> str:
    if "\n" not in text:
        return f"column {pos + 1}"
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"line {line}, column {column}"


def parse_filter(text: str) -> list[Any]:
    """The JSON form of a filter written in the text syntax (Ganeti's ``ParseFilter``).

    Raises ``OpPrereqError(..., "wrong_input")`` naming the column where
    the syntax breaks.  The result always passes :func:`check_filter`.
    """
    if not isinstance(text, str):
        raise OpPrereqError(f"Invalid query filter: expected text, got {type(text).__name__}",
                            ECODE_INVAL)
    try:
        result = _Parser(text).parse()
    except _SyntaxError as err:
        raise OpPrereqError(f"Invalid query filter at {_where(text, err.pos)}: "
                            f"{err.message}", ECODE_INVAL) from None
    check_filter(result)
    return result


# --- command-line arguments ---------------------------------------------------

def is_filter_text(text: str) -> bool:
    """Whether a command-line argument is a filter expression, not a name."""
    return not FILTER_DETECTION_CHARS.isdisjoint(text)


def is_glob(text: str) -> bool:
    """Whether a name is a glob pattern."""
    return not GLOB_DETECTION_CHARS.isdisjoint(text)


def make_simple_filter(field: str, values: Sequence[Any]) -> list[Any] | None:
    """``["|", ["==", field, v], ...]``; None without values (``MakeSimpleFilter``)."""
    if not values:
        return None
    return [c.QLANG_OP_OR] + [[c.QLANG_OP_EQUAL, field, value] for value in values]


def make_name_filter(names: Sequence[str], field: str = "name",
                     numeric: bool = False) -> list[Any] | None:
    """The filter for names: ``["|", ...]`` of ``==`` tests, ``=~`` for glob
    patterns; with ``numeric`` every name must be an integer (job ids).
    None without names."""
    if not names:
        return None
    parts: list[Any] = [c.QLANG_OP_OR]
    for name in names:
        if numeric:
            try:
                parts.append([c.QLANG_OP_EQUAL, field, int(name)])
            except ValueError:
                raise OpPrereqError(f"Invalid job ID passed: {name!r}", ECODE_INVAL) from None
        elif is_glob(name):
            parts.append([c.QLANG_OP_REGEXP, field, glob_pattern(name)])
        else:
            parts.append([c.QLANG_OP_EQUAL, field, name])
    return parts


def make_filter(args: Sequence[str], force_filter: bool, field: str = "name",
                numeric: bool = False) -> list[Any] | None:
    """The filter for the arguments of a list command (Ganeti's ``MakeFilter``).

    With ``force_filter`` (``-F``), or when the only argument holds one of
    :data:`FILTER_DETECTION_CHARS`, the argument is a filter expression;
    otherwise the arguments are names (:func:`make_name_filter`).
    """
    if force_filter or (len(args) == 1 and is_filter_text(args[0])):
        if len(args) != 1:
            raise OpPrereqError("Exactly one argument must be given as a filter", ECODE_INVAL)
        return parse_filter(args[0])
    return make_name_filter(args, field, numeric)


# --- back to text ---------------------------------------------------------------

def _render_string(value: str) -> str:
    for quote in "\"'":
        text = quote + value + quote
        try:
            if _scan_string(text, 0) == (value, len(text)):
                return text
        except _SyntaxError:
            pass
    raise ValueError(f"the string {value!r} cannot be written in the filter syntax")


def _render_value(value: Any) -> str:
    if isinstance(value, str):
        return _render_string(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise ValueError(f"the value {value!r} cannot be written in the filter syntax "
                     "(only integers and strings can)")


def _render_regexp(regexp: Any) -> str:
    if not isinstance(regexp, str):
        raise ValueError(f"'=~' needs a string, got {regexp!r}")
    delimiter = next((d for d in REGEXP_DELIMITERS if d not in regexp), REGEXP_DELIMITERS[0])
    escaped = {"\\": "\\\\", delimiter: "\\" + delimiter, "\n": "\\n", "\r": "\\r"}
    text = delimiter + "".join(escaped.get(ch, ch) for ch in regexp) + delimiter
    try:
        readable = _scan_regexp_body(text, 0) == (regexp, len(text))
    except _SyntaxError:
        readable = False
    if not readable:
        # e.g. a backslash before 't': Ganeti's syntax turns "\t" into a tab
        raise ValueError(f"the regular expression {regexp!r} cannot be written in the "
                         "filter syntax")
    return text


def _render_field(name: Any) -> str:
    if not isinstance(name, str) or not _FIELD_RE.match(name) or name in KEYWORDS:
        raise ValueError(f"the field name {name!r} cannot be written in the filter syntax")
    return name


def _render(flt: Any, parent: str | None) -> str:
    op, operands = flt[0], flt[1:]
    if op in (c.QLANG_OP_OR, c.QLANG_OP_AND):
        if not operands:
            raise ValueError(f"an empty {op!r} cannot be written in the filter syntax")
        if len(operands) == 1:
            return _render(operands[0], parent)
        word = " or " if op == c.QLANG_OP_OR else " and "
        text = word.join(_render(sub, op) for sub in operands)
        # "and" binds tighter than "or"; parentheses keep every other nesting
        if parent is None or (parent == c.QLANG_OP_OR and op == c.QLANG_OP_AND):
            return text
        return f"({text})"
    if op == c.QLANG_OP_NOT:
        return "not " + _render(operands[0], op)
    if op == c.QLANG_OP_TRUE:
        return _render_field(operands[0])
    field, value = operands
    if op == c.QLANG_OP_CONTAINS:
        return f"{_render_value(value)} in {_render_field(field)}"
    if op == c.QLANG_OP_REGEXP:
        return f"{_render_field(field)} =~ {_render_regexp(value)}"
    text_op = c.QLANG_OP_EQUAL if op == c.QLANG_OP_EQUAL_LEGACY else op
    return f"{_render_field(field)} {text_op} {_render_value(value)}"


def render(flt: Any) -> str:
    """A filter in the text syntax; :func:`parse_filter` reads it back.

    What parsing gives back is the same filter, except that ``=`` comes
    back as ``==`` and an ``|`` or ``&`` of one operand as the operand.
    Raises ``ValueError`` for what the syntax cannot express: no filter
    (None), booleans, floats, empty ``|``/``&``, field names that are not
    identifiers, and strings or regular expressions the quoting cannot hold.
    """
    if flt is None:
        raise ValueError("no filter (null) cannot be written in the filter syntax")
    check_filter(flt)
    return _render(flt, None)

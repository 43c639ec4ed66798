"""Ganeti's query language: filters as JSON prefix lists, and their text syntax.

:mod:`ganeti.core.qlang.jsonform` checks and evaluates the JSON form that
travels over LUXI and RAPI.  Query resources, the job-queue filter rules and
the command-line tools all use it.  The names below are the public interface.
"""

from ganeti.core.qlang.jsonform import (
    ALL_OPERATORS,
    MATCH_ALL,
    MAX_DEPTH,
    FieldSpec,
    Filter,
    Getter,
    check_filter,
    compile_filter,
    hostname_matches,
    merge_timestamp,
    requested_values,
)
from ganeti.core.qlang.parser import (
    FILTER_DETECTION_CHARS,
    GLOB_DETECTION_CHARS,
    KEYWORDS,
    REGEXP_DELIMITERS,
    REGEXP_FLAGS,
    glob_pattern,
    is_filter_text,
    is_glob,
    make_filter,
    make_name_filter,
    make_simple_filter,
    parse_filter,
    render,
)

__all__ = [
    "ALL_OPERATORS", "MATCH_ALL", "MAX_DEPTH", "FieldSpec", "Filter", "Getter",
    "check_filter", "compile_filter", "hostname_matches", "merge_timestamp",
    "requested_values",
    "FILTER_DETECTION_CHARS", "GLOB_DETECTION_CHARS", "KEYWORDS", "REGEXP_DELIMITERS",
    "REGEXP_FLAGS", "glob_pattern", "is_filter_text", "is_glob", "make_filter",
    "make_name_filter", "make_simple_filter", "parse_filter", "render",
]

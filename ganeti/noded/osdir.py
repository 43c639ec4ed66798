"""OS definitions on disk: finding them on the search path and reading one directory.

An OS definition is a directory named after the OS in one of the search path's
directories (``Paths.os_search_path``, Ganeti's ``OS_SEARCH_PATH``); the first
directory holding the name wins.  It contains (Ganeti's OS interface, API 10,
15 and 20):

- ``ganeti_api_version``: the API versions it speaks, one a line;
- the executable scripts ``create`` (or ``create_untrusted``), ``import``,
  ``export``, ``rename`` and, for API 20, ``verify``;
- ``variants.list`` (API 15 and later, optional): one variant a line;
- ``parameters.list`` (API 20, required): ``name description`` a line.

Everything here reads files: call it through the node's thread pool.  The
checks and their messages are Ganeti's (``_TryOSFromDisk``), so ``gnt-os
diagnose`` says the same as on a Ganeti node.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ganeti.core import constants

API_FILE = "ganeti_api_version"
VARIANTS_FILE = "variants.list"
PARAMETERS_FILE = "parameters.list"

SCRIPT_CREATE = "create"
SCRIPT_CREATE_UNTRUSTED = "create_untrusted"
SCRIPT_EXPORT = "export"
SCRIPT_IMPORT = "import"
SCRIPT_RENAME = "rename"
SCRIPT_VERIFY = "verify"
#: Every script of an OS definition (Ganeti's OS_SCRIPTS).
SCRIPTS = (SCRIPT_CREATE, SCRIPT_CREATE_UNTRUSTED, SCRIPT_EXPORT, SCRIPT_IMPORT,
           SCRIPT_RENAME, SCRIPT_VERIFY)

API_V15 = 15
API_V20 = 20
API_VERSIONS = frozenset(constants.OS_API_VERSIONS)


class OsError(Exception):
    """An OS definition is missing or not valid; the message is Ganeti's."""


@dataclass(frozen=True)
class OsDefinition:
    """One valid OS definition as read from its directory."""

    name: str
    path: str
    api_versions: list[int]
    variants: list[str] = field(default_factory=list)
    #: ``[name, description]`` pairs from parameters.list
    parameters: list[list[str]] = field(default_factory=list)
    #: script name -> absolute path, for the scripts present
    scripts: dict[str, str] = field(default_factory=dict)

    @property
    def api_version(self) -> int:
        """The version used with it: the highest one both sides speak."""
        return max(API_VERSIONS.intersection(self.api_versions))

    @property
    def trusted(self) -> bool:
        """Whether it installs with a trusted ``create`` (no ``create_untrusted``)."""
        return SCRIPT_CREATE_UNTRUSTED not in self.scripts

    def script(self, name: str) -> str | None:
        """The path of script ``name``, None if the definition has none."""
        return self.scripts.get(name)

    def to_dict(self) -> dict[str, Any]:
        """The definition as ``os_get`` answers it (Ganeti 2.x's OS object)."""
        return {
            "name": self.name, "path": self.path, "api_versions": list(self.api_versions),
            "supported_variants": list(self.variants),
            "supported_parameters": [list(p) for p in self.parameters],
            "trusted": self.trusted,
            **{f"{s}_script": self.scripts.get(s) for s in SCRIPTS},
        }


def split_name(name: str) -> tuple[str, str]:
    """``(os, variant)`` of ``os+variant`` (variant '' if none)."""
    base, _, variant = name.partition("+")
    return base, variant


def _strerror(err: OSError) -> str:
    return err.strerror or str(err)


def read_api_versions(os_dir: str) -> list[int]:
    """The versions in ``os_dir``'s ganeti_api_version; OsError in Ganeti's words."""
    api_file = os.path.join(os_dir, API_FILE)
    try:
        st = os.stat(api_file)
    except OSError as err:
        raise OsError(f"Required file '{API_FILE}' not found under path {os_dir}: "
                      f"{_strerror(err)}") from None
    if not stat.S_ISREG(st.st_mode):
        raise OsError(f"File '{API_FILE}' in {os_dir} is not a regular file")
    try:
        with open(api_file, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError as err:
        raise OsError(f"Error while reading the API version file at {api_file}: "
                      f"{_strerror(err)}") from None
    try:
        return [int(line.strip()) for line in lines]
    except ValueError as err:
        raise OsError(f"API version(s) can't be converted to integer: {err}") from None


def _read_lines(path: str) -> list[str]:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read().splitlines()


def read_definition(name: str, os_dir: str) -> OsDefinition:
    """The OS definition in ``os_dir``; OsError (Ganeti's message) if it is not valid."""
    versions = read_api_versions(os_dir)
    if not API_VERSIONS.intersection(versions):
        raise OsError(f"API version mismatch for path '{os_dir}': found {versions}, want "
                      f"{sorted(API_VERSIONS)}.")
    top = max(versions)
    # file -> required; a missing optional file is left out
    wanted: dict[str, bool] = dict.fromkeys(SCRIPTS, True)
    wanted[SCRIPT_CREATE] = wanted[SCRIPT_CREATE_UNTRUSTED] = False
    if top >= API_V15:
        wanted[VARIANTS_FILE] = False
    if top >= API_V20:
        wanted[PARAMETERS_FILE] = True
    else:
        del wanted[SCRIPT_VERIFY]
    found: dict[str, str] = {}
    for filename, required in wanted.items():
        path = os.path.join(os_dir, filename)
        try:
            st = os.stat(path)
        except OSError as err:
            if err.errno == errno.ENOENT and not required:
                continue
            raise OsError(f"File '{filename}' under path '{os_dir}' is missing "
                          f"({_strerror(err)})") from None
        if not stat.S_ISREG(st.st_mode):
            raise OsError(f"File '{filename}' under path '{os_dir}' is not a regular file")
        if filename in SCRIPTS and not st.st_mode & stat.S_IXUSR:
            raise OsError(f"File '{filename}' under path '{os_dir}' is not executable")
        found[filename] = path
    if SCRIPT_CREATE not in found and SCRIPT_CREATE_UNTRUSTED not in found:
        raise OsError(f"A create script (trusted or untrusted) under path '{os_dir}' "
                      "must exist")
    variants: list[str] = []
    if VARIANTS_FILE in found:
        try:
            variants = [line.strip() for line in _read_lines(found[VARIANTS_FILE])
                        if line.strip() and not line.lstrip().startswith("#")]
        except OSError as err:
            raise OsError(f"Error while reading the OS variants file at "
                          f"{found[VARIANTS_FILE]}: {_strerror(err)}") from None
    parameters: list[list[str]] = []
    if PARAMETERS_FILE in found:
        try:
            lines = _read_lines(found[PARAMETERS_FILE])
        except OSError as err:
            raise OsError(f"Error while reading the OS parameters file at "
                          f"{found[PARAMETERS_FILE]}: {_strerror(err)}") from None
        # Ganeti splits each line into name and description; blank lines give nothing
        parameters = [parts if len(parts) == 2 else parts + [""]
                      for parts in (line.split(None, 1) for line in lines) if parts]
    scripts = {s: p for s, p in found.items() if s in SCRIPTS}
    return OsDefinition(name, os_dir, versions, variants, parameters, scripts)


def _valid_dir_name(name: str) -> bool:
    return bool(name) and "/" not in name and name not in (".", "..") and "\0" not in name


def find_dir(name: str, search_path: Iterable[str]) -> str | None:
    """The first ``<dir>/<name>`` of the search path that is a directory."""
    if not _valid_dir_name(name):
        return None
    for base in search_path:
        path = os.path.join(base, name)
        if os.path.isdir(path):
            return path
    return None


def find_definition(name: str, search_path: Iterable[str]) -> OsDefinition:
    """The valid OS definition called ``name`` (a variant is ignored); OsError if the
    search path has none or it is not valid."""
    base, _ = split_name(name)
    os_dir = find_dir(base, search_path)
    if os_dir is None:
        raise OsError(f"Directory for OS {base} not found in search path")
    return read_definition(base, os_dir)


def diagnose(search_path: Iterable[str]) -> list[list[Any]]:
    """``os_diagnose``'s answer: for every entry of every search directory
    ``[name, path, status, diagnose, variants, parameters, api_versions, trusted]``
    (Ganeti's ``DiagnoseOS``; hidden entries, starting with a dot, are skipped)."""
    result: list[list[Any]] = []
    for top in search_path:
        if not os.path.isdir(top):
            continue
        try:
            names = sorted(n for n in os.listdir(top) if not n.startswith("."))
        except OSError:
            break  # as Ganeti's: a search directory that cannot be listed ends the scan
        for name in names:
            path = os.path.join(top, name)
            try:
                if not os.path.isdir(path):
                    raise OsError(f"Directory for OS {name} not found in search path")
                osdef = read_definition(name, path)
            except OsError as err:
                result.append([name, path, False, str(err), [], [], [], True])
                continue
            result.append([name, path, True, "", list(osdef.variants),
                           [list(p) for p in osdef.parameters], list(osdef.api_versions),
                           osdef.trusted])
    return result


def check_variant(osdef: OsDefinition, name: str) -> None:
    """OsError unless ``name``'s variant is one the definition declares (Ganeti's
    ``_CheckOSVariant``)."""
    _, variant = split_name(name)
    if not osdef.variants:
        if variant:
            raise OsError(f"OS '{osdef.name}' does not support variants ('{variant}' "
                          "passed)")
        return
    if not variant:
        raise OsError(f"OS name '{name}' must include a variant")
    if variant not in osdef.variants:
        raise OsError(f"OS '{osdef.name}' does not support variant '{variant}'")


def check_parameters(osdef: OsDefinition, names: Iterable[str]) -> None:
    """OsError for parameters the definition does not declare (``_CheckOSPList``)."""
    supported = {p[0] for p in osdef.parameters}
    delta = sorted(set(names) - supported)
    if delta:
        raise OsError(f"The following parameters are not supported by the OS "
                      f"{osdef.name}: {', '.join(delta)}")

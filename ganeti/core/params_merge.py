"""How a parameter change merges into what is stored, as Ganeti merges it.

A change to a parameter dict updates only the keys it names; with
``use_default`` the value ``"default"`` removes a key (so the inherited
value applies again).  Instance policies have their own rules
(:func:`get_updated_ipolicy`): the standard spec merges key by key, bounds
(``minmax``) and the disk-template list are replaced whole, ratios are
floats, and a group policy may drop a key where the cluster policy may not.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ganeti.core import constants
from ganeti.core.errors import ECODE_INVAL, ConfigurationError, OpPrereqError
from ganeti.core.params_types import (
    DISK_DT_TYPES,
    ISPECS_PARAMETER_TYPES,
    VALUE_DEFAULT,
    force_dict_type,
)

IPOLICY_PARAMETERS = (constants.IPOLICY_SPINDLE_RATIO, constants.IPOLICY_VCPU_RATIO)
#: Ganeti's own order of the policy keys (config.data, RAPI, queries).
IPOLICY_KEY_ORDER = (constants.IPOLICY_MINMAX, constants.IPOLICY_STD,
                     constants.IPOLICY_SPINDLE_RATIO, constants.IPOLICY_VCPU_RATIO,
                     constants.IPOLICY_DTS)
IPOLICY_ALL_KEYS = frozenset(IPOLICY_KEY_ORDER)
ISPECS_MINMAX_KEYS = (constants.ISPECS_MIN, constants.ISPECS_MAX)
#: Ganeti's order of the instance-spec keys.
ISPECS_KEY_ORDER = (constants.ISPEC_MEM_SIZE, constants.ISPEC_DISK_SIZE,
                    constants.ISPEC_DISK_COUNT, constants.ISPEC_CPU_COUNT,
                    constants.ISPEC_NIC_COUNT, constants.ISPEC_SPINDLE_USE)
DISK_VALID_ACCESS_MODES = ("kernelspace", "userspace")

_MAC_PREFIX_RE = re.compile(r"^[0-9a-f]{2}:[0-9a-f]{2}:[0-9a-f]{2}$", re.I)
_TOOL_RE = re.compile(r"^[-_a-zA-Z0-9]+$")


def comma_join(items: Iterable[Any]) -> str:
    """Ganeti's ``CommaJoin``."""
    return ", ".join(str(i) for i in items)


def fill_dict(defaults: Mapping[str, Any], custom: Mapping[str, Any],
              skip_keys: Iterable[str] = ()) -> dict[str, Any]:
    """A deep copy of ``defaults`` updated with ``custom`` (``skip_keys`` dropped)."""
    result = copy.deepcopy(dict(defaults))
    result.update(copy.deepcopy(dict(custom)))
    for key in skip_keys:
        result.pop(key, None)
    return result


def get_updated_params(old: Mapping[str, Any], update: Mapping[str, Any],
                       use_default: bool = True, use_none: bool = False) -> dict[str, Any]:
    """``old`` with ``update`` applied; ``"default"`` (or None) removes a key."""
    result = copy.deepcopy(dict(old))
    for key, value in update.items():
        if (use_default and value == VALUE_DEFAULT) or (use_none and value is None):
            result.pop(key, None)
        else:
            result[key] = copy.deepcopy(value)
    return result


#: Node parameters set for the cluster or a group only (Ganeti's NDC_GLOBALS).
NDC_GLOBALS = frozenset({"exclusive_storage"})


def check_params_not_global(params: Mapping[str, Any], global_names: Iterable[str],
                            kind: str, bad_level: str, good_levels: str) -> None:
    """Ganeti's CheckParamsNotGlobal: OpPrereqError (wrong_input) if ``params`` sets a
    parameter that only ``good_levels`` may set."""
    used = [name for name in params if name in frozenset(global_names)]
    if used:
        raise OpPrereqError(f"The following {kind} parameters are global and cannot be "
                            f"customized at {bad_level} level, please modify them at "
                            f"{good_levels} level: {comma_join(used)}", ECODE_INVAL)


def verify_dict_options(options: Mapping[str, Any], defaults: Mapping[str, Any]) -> None:
    """Refuse keys (at any depth) that ``defaults`` does not have."""
    invalid = _missing_keys("", options, defaults)
    if invalid:
        raise OpPrereqError(f"Provided option keys not supported: {comma_join(invalid)}",
                            ECODE_INVAL)


def _missing_keys(path: str, options: Mapping[str, Any],
                  defaults: Mapping[str, Any]) -> list[str]:
    invalid: list[str] = []
    for key, value in options.items():
        where = f"{path}/{key}" if path else key
        if key not in defaults:
            invalid.append(where)
        elif isinstance(value, dict) and isinstance(defaults[key], Mapping):
            invalid.extend(_missing_keys(where, value, defaults[key]))
    return invalid


def check_disk_access_modes(diskparams: Mapping[str, Mapping[str, Any]]) -> None:
    """Each template's ``access`` must be userspace or kernelspace."""
    for template, values in diskparams.items():
        access = values.get("access", "kernelspace")
        if access not in DISK_VALID_ACCESS_MODES:
            raise OpPrereqError(f"Invalid value of '{template}:access': '{access}' (expected "
                                f"one of {comma_join(DISK_VALID_ACCESS_MODES)})")


def force_diskparams(diskparams: Mapping[str, Any]) -> None:
    """Coerce every template's parameters in place (``DISK_DT_TYPES``)."""
    for values in diskparams.values():
        force_dict_type(values, DISK_DT_TYPES)


def normalize_mac_prefix(prefix: str) -> str:
    """A three-octet MAC prefix in lower case, or ``wrong_input``."""
    if not _MAC_PREFIX_RE.match(prefix):
        raise OpPrereqError(f"Invalid MAC address prefix '{prefix}'", ECODE_INVAL)
    return prefix.lower()


def check_compression_tools(tools: list[str]) -> None:
    """Names made of [-_a-zA-Z0-9]; gzip present; none absent."""
    illegal = [t for t in tools if not _TOOL_RE.match(t)]
    if illegal:
        raise OpPrereqError(f"The tools '{', '.join(illegal)}' contain illegal characters: "
                            "only alphanumeric values, dashes, and underscores are allowed",
                            ECODE_INVAL)
    if "gzip" not in tools:
        raise OpPrereqError("For compatibility reasons, the gzip utility must be present "
                            "among the compression tools", ECODE_INVAL)
    if "none" in tools:
        raise OpPrereqError("none is a reserved value used for no compression, and cannot "
                            "be used as the name of a tool", ECODE_INVAL)


# --- instance policies ----------------------------------------------------------

def _is_unset(value: Any) -> bool:
    return not value or value == [VALUE_DEFAULT] or value == VALUE_DEFAULT


def get_updated_ipolicy(old: Mapping[str, Any], change: Mapping[str, Any],
                        group_policy: bool = False) -> dict[str, Any]:
    """The policy after ``change``, checked (``OpPrereqError`` / ``TypeEnforcementError``)."""
    ipolicy = copy.deepcopy(dict(old))
    for key, value in change.items():
        if key not in IPOLICY_ALL_KEYS:
            raise OpPrereqError(f"Invalid key in new ipolicy: {key}", ECODE_INVAL)
        if _is_unset(value):
            if not group_policy:
                raise OpPrereqError(f"Can't unset ipolicy attribute '{key}' on the "
                                    "cluster'", ECODE_INVAL)
            ipolicy.pop(key, None)
        elif key in IPOLICY_PARAMETERS:
            try:
                ipolicy[key] = float(value)
            except (TypeError, ValueError) as err:
                raise OpPrereqError(f"Invalid value for attribute '{key}': '{value}', "
                                    f"error: {err}", ECODE_INVAL) from None
        elif key == constants.IPOLICY_MINMAX:
            ipolicy[key] = _forced_minmax(value)
        elif key == constants.IPOLICY_STD:
            if group_policy:
                raise OpPrereqError(f"{key} cannot appear in group instance specs",
                                    ECODE_INVAL)
            if not isinstance(value, dict):
                raise OpPrereqError(f"Invalid value for attribute '{key}': '{value}'",
                                    ECODE_INVAL)
            std = get_updated_params(old.get(key, {}), value, use_default=False)
            ipolicy[key] = force_dict_type(std, ISPECS_PARAMETER_TYPES)
        else:
            if not isinstance(value, (list, tuple, str)):
                raise OpPrereqError(f"Invalid value for attribute '{key}': '{value}'",
                                    ECODE_INVAL)
            ipolicy[key] = list(value)
    try:
        check_ipolicy_syntax(ipolicy, not group_policy)
    except ConfigurationError as err:
        raise OpPrereqError(f"Invalid instance policy: {err.args[0]}", ECODE_INVAL) from None
    return ipolicy


def _forced_minmax(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(p, dict) for p in value):
        raise OpPrereqError(f"Invalid value for attribute '{constants.IPOLICY_MINMAX}': "
                            f"'{value}'", ECODE_INVAL)
    result = copy.deepcopy(value)
    for pair in result:
        for spec in pair.values():
            force_dict_type(spec, ISPECS_PARAMETER_TYPES)
    return result


def check_ipolicy_syntax(ipolicy: Mapping[str, Any], check_std: bool) -> None:
    """Ganeti's ``InstancePolicy.CheckParameterSyntax`` (``ConfigurationError``)."""
    _check_ispecs(ipolicy, check_std)
    if constants.IPOLICY_DTS in ipolicy:
        templates = ipolicy[constants.IPOLICY_DTS]
        if not templates:
            raise ConfigurationError("Instance policy must contain at least one disk "
                                     "template")
        wrong = sorted(set(templates) - set(constants.DISK_TEMPLATES))
        if wrong:
            raise ConfigurationError(f"Invalid disk template(s) {comma_join(wrong)}")
    for key in IPOLICY_PARAMETERS:
        if key in ipolicy:
            try:
                float(ipolicy[key])
            except (TypeError, ValueError) as err:
                raise ConfigurationError(f"Invalid value for key '{key}': "
                                         f"'{ipolicy[key]}', error: {err}") from None
    wrong_keys = sorted(set(ipolicy) - IPOLICY_ALL_KEYS)
    if wrong_keys:
        raise ConfigurationError(f"Invalid keys in ipolicy: {comma_join(wrong_keys)}")


def _incomplete(spec: Mapping[str, Any], name: str) -> None:
    missing = [p for p in sorted(constants.ISPECS_PARAMETERS) if p not in spec]
    if missing:
        raise ConfigurationError(f"Missing instance specs parameters for {name}: "
                                 f"{comma_join(missing)}")


def _check_ispecs(ipolicy: Mapping[str, Any], check_std: bool) -> None:
    if constants.IPOLICY_MINMAX not in ipolicy:
        return
    if check_std and constants.IPOLICY_STD not in ipolicy:
        raise ConfigurationError(f"Missing key in ipolicy: {constants.IPOLICY_STD}")
    std = ipolicy.get(constants.IPOLICY_STD) or {}
    if check_std:
        _incomplete(std, constants.IPOLICY_STD)
    if not ipolicy[constants.IPOLICY_MINMAX]:
        raise ConfigurationError("Empty minmax specifications")
    std_is_good = False
    for pair in ipolicy[constants.IPOLICY_MINMAX]:
        missing = [k for k in ISPECS_MINMAX_KEYS if k not in pair]
        if missing:
            raise ConfigurationError(f"Missing instance specification: "
                                     f"{comma_join(missing)}")
        for key, spec in pair.items():
            if key not in ISPECS_MINMAX_KEYS:
                raise ConfigurationError(f"Invalid key in bounds instance "
                                         f"specifications: {key}")
            _incomplete(spec, key)
        pair_ok = True
        for name in sorted(constants.ISPECS_PARAMETERS):
            low = pair[constants.ISPECS_MIN][name]
            high = pair[constants.ISPECS_MAX][name]
            if low > high:
                raise ConfigurationError(f"Invalid specification of min/max values for "
                                         f"{name}: {low}/{high}")
            if check_std:
                value = std.get(name, low)
                pair_ok = pair_ok and low <= value <= high
        std_is_good = std_is_good or pair_ok
    if not std_is_good:
        raise ConfigurationError("Invalid std specifications")


def fill_ipolicy(defaults: Mapping[str, Any], custom: Mapping[str, Any]) -> dict[str, Any]:
    """A group's effective policy: its own keys over the cluster's (std merged)."""
    result = copy.deepcopy(dict(custom))
    for key, value in defaults.items():
        if key not in result:
            result[key] = copy.deepcopy(value)
        elif key == constants.IPOLICY_STD:
            result[key] = fill_dict(value, result[key])
    return result


def check_ipolicy_vs_disk_templates(ipolicy: Mapping[str, Any],
                                    enabled: Iterable[str]) -> None:
    """Every template the policy allows must be enabled on the cluster."""
    not_enabled = sorted(set(ipolicy.get(constants.IPOLICY_DTS, [])) - set(enabled))
    if not_enabled:
        raise OpPrereqError("The following disk templates are allowed by the ipolicy, but "
                            f"not enabled on the cluster: {comma_join(not_enabled)}",
                            ECODE_INVAL)


def ordered_ipolicy(ipolicy: Mapping[str, Any]) -> dict[str, Any]:
    """The policy with its keys (and spec keys) in Ganeti's order."""
    def spec(values: Any) -> Any:
        if not isinstance(values, Mapping):
            return values
        known = [k for k in ISPECS_KEY_ORDER if k in values]
        return {k: values[k] for k in known + sorted(set(values) - set(known))}

    out: dict[str, Any] = {}
    for key in list(IPOLICY_KEY_ORDER) + sorted(set(ipolicy) - IPOLICY_ALL_KEYS):
        if key not in ipolicy:
            continue
        value = ipolicy[key]
        if key == constants.IPOLICY_MINMAX and isinstance(value, list):
            value = [{k: spec(p[k]) for k in ISPECS_MINMAX_KEYS + tuple(
                sorted(set(p) - set(ISPECS_MINMAX_KEYS))) if k in p}
                if isinstance(p, Mapping) else p for p in value]
        elif key == constants.IPOLICY_STD:
            value = spec(value)
        out[key] = value
    return out

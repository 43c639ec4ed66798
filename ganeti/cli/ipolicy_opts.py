"""Instance-policy options of gnt-cluster and gnt-group, parsed as Ganeti's tools do.

``--ipolicy-bounds-specs min:memory-size=128,...,/max:...//min:.../max:...``
gives the bounds (every spec must be complete); ``--ipolicy-std-specs`` (cluster
only) gives the keys of the standard spec to change; sizes take units.  For a
group, ``default`` as a value drops the group's own setting.  :func:`policy_info`
shows a policy in ``gnt-cluster info`` and ``gnt-group info`` as Ganeti does.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from ganeti.cli import table
from ganeti.core import constants as c
from ganeti.core import errors
from ganeti.core.params_merge import ISPECS_MINMAX_KEYS
from ganeti.core.params_types import (
    ISPECS_PARAMETER_TYPES,
    VALUE_DEFAULT,
    UnitParseError,
    force_dict_type,
    parse_unit,
)


def _maybe_float(value: str) -> float | str:
    if value.lower() == VALUE_DEFAULT:
        return VALUE_DEFAULT
    try:
        return float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: {value!r}") from None


def add_ipolicy_options(p: argparse.ArgumentParser, cluster: bool) -> None:
    """The instance-policy options (``cluster``: also --ipolicy-std-specs)."""
    if cluster:
        p.add_argument("--ipolicy-std-specs", metavar="SPEC=VAL,...",
                       help="instance policy: standard instance specs to change "
                            "(memory-size, cpu-count, disk-count, disk-size, nic-count, "
                            "spindle-use)")
    p.add_argument("--ipolicy-bounds-specs", metavar="BOUNDS",
                   help="instance policy: complete min/max specs, e.g. "
                        "min:memory-size=128,...,spindle-use=1/max:...; several pairs "
                        "separated by //" + ("" if cluster else "; 'default' drops them"))
    p.add_argument("--ipolicy-disk-templates", metavar="TEMPLATES",
                   help="instance policy: comma-separated allowed disk templates")
    p.add_argument("--ipolicy-vcpu-ratio", type=_maybe_float, metavar="RATIO",
                   help="instance policy: maximal vcpu-to-cpu ratio")
    p.add_argument("--ipolicy-spindle-ratio", type=_maybe_float, metavar="RATIO",
                   help="instance policy: maximal instances-to-spindle ratio")


def _split_keyval(text: str, opt: str) -> dict[str, str]:
    result: dict[str, str] = {}
    for elem in text.split(",") if text else []:
        if "=" not in elem:
            raise errors.ParameterError(f"Missing value for key '{elem}' in option {opt}")
        key, value = elem.split("=", 1)
        if key in result:
            raise errors.ParameterError(f"Duplicate key '{key}' in option {opt}")
        result[key] = value
    return result


def parse_bounds(text: str, opt: str = "--ipolicy-bounds-specs") -> list[dict[str, Any]]:
    """``ident:key=val,.../ident:...//...`` into a list of {ident: {key: val}}."""
    result = []
    for line in text.split("//"):
        pair: dict[str, Any] = {}
        for elem in line.split("/"):
            if not elem:
                raise errors.ParameterError(f"Empty section in option '{opt}'")
            ident, _, rest = elem.partition(":")
            if ident in pair:
                raise errors.ParameterError(f"Duplicated parameter '{ident}' in parsing "
                                            f"{opt}: {elem}")
            pair[ident] = _split_keyval(rest, opt)
        result.append(pair)
    return result


def _parse_spec(spec: dict[str, Any], keyname: str, required: bool) -> dict[str, Any]:
    out = dict(spec)
    for key in (c.ISPEC_DISK_SIZE, c.ISPEC_MEM_SIZE):
        if key in out:
            try:
                out[key] = parse_unit(out[key])
            except UnitParseError as err:
                raise errors.OpPrereqError(f"Invalid parameter {key} ({out[key]}) in "
                                           f"{keyname} instance specs: {err}",
                                           errors.ECODE_INVAL) from None
    force_dict_type(out, ISPECS_PARAMETER_TYPES)
    missing = [k for k in sorted(c.ISPECS_PARAMETERS) if k not in out]
    if required and missing:
        raise errors.OpPrereqError(f"Missing parameters in ipolicy spec {keyname}: "
                                   f"{', '.join(missing)}", errors.ECODE_INVAL)
    return out


def ipolicy_value(opts: argparse.Namespace, group: bool) -> dict[str, Any]:
    """The ``ipolicy`` change the options ask for (empty: none)."""
    ipolicy: dict[str, Any] = {}
    bounds = opts.ipolicy_bounds_specs
    if bounds is not None:
        parsed = parse_bounds(bounds)
        if (group and len(parsed) == 1 and len(parsed[0]) == 1
                and VALUE_DEFAULT in parsed[0] and not parsed[0][VALUE_DEFAULT]):
            ipolicy[c.IPOLICY_MINMAX] = VALUE_DEFAULT
        else:
            out = []
            for pair in parsed:
                checked = {}
                for key, spec in pair.items():
                    if key not in ISPECS_MINMAX_KEYS:
                        raise errors.OpPrereqError("Invalid key in bounds instance "
                                                   f"specifications: {key}",
                                                   errors.ECODE_INVAL)
                    checked[key] = _parse_spec(spec, key, True)
                out.append(checked)
            ipolicy[c.IPOLICY_MINMAX] = out
    std = getattr(opts, "ipolicy_std_specs", None)
    if std is not None:
        ipolicy[c.IPOLICY_STD] = _parse_spec(_split_keyval(std, "--ipolicy-std-specs"),
                                             "std", False)
    templates = opts.ipolicy_disk_templates
    if templates is not None:
        # ["default"] drops a group's own list (the server refuses it for the cluster)
        ipolicy[c.IPOLICY_DTS] = [t for t in templates.split(",") if t] if templates else []
    for key, value in ((c.IPOLICY_VCPU_RATIO, opts.ipolicy_vcpu_ratio),
                       (c.IPOLICY_SPINDLE_RATIO, opts.ipolicy_spindle_ratio)):
        if value is not None:
            ipolicy[key] = value
    return ipolicy


#: The bounds' keys as the info output shows them (``max/0``, ``min/0``).
_INFO_MINMAX_KEYS = (c.ISPECS_MAX, c.ISPECS_MIN)
#: The policy's ratios, in the order the info output shows them.
_INFO_RATIOS = (c.IPOLICY_VCPU_RATIO, c.IPOLICY_SPINDLE_RATIO)


def _ratio(value: Any) -> Any:
    """A ratio as luxid sends it: ``4`` for 4.0 (a JSON number without a fraction)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def policy_info(custom: Mapping[str, Any] | None, effective: Mapping[str, Any],
                is_cluster: bool) -> list[table.Entry]:
    """An instance policy for info output (Ganeti's ``FormatPolicyInfo``).

    ``bounds specs`` (a list of ``max/N``, ``min/N`` mappings), for the cluster
    ``std``, then ``allowed disk templates``, ``vcpu-ratio`` and ``spindle-ratio``.
    For a group, what it does not set itself is shown as ``default (value)``
    (``custom``: its own policy, ``effective``: the filled one); the cluster's
    policy is all its own.  Ganeti's QA reads this back as YAML
    (``qa_utils.ParseIPolicy``).
    """
    custom = dict(effective if is_cluster else custom or {})
    own_minmax = custom.get(c.IPOLICY_MINMAX)
    bounds = []
    for index, minmax in enumerate(own_minmax or effective.get(c.IPOLICY_MINMAX) or []):
        bounds.append([(f"{key}/{index}",
                        table.format_params_info(minmax[key] if own_minmax else {},
                                                 minmax[key]))
                       for key in _INFO_MINMAX_KEYS if key in minmax])
    info: list[table.Entry] = [("bounds specs", bounds)]
    if is_cluster:
        std = custom.get(c.IPOLICY_STD) or {}
        info.append((c.IPOLICY_STD, table.format_params_info(std, std)))
    if custom.get(c.IPOLICY_DTS) is not None:
        templates = ", ".join(custom[c.IPOLICY_DTS])
    else:
        templates = f"default ({', '.join(effective.get(c.IPOLICY_DTS) or [])})"
    info.append(("allowed disk templates", templates))
    for key in _INFO_RATIOS:
        if key in custom:
            info.append((key, str(_ratio(custom[key]))))
        else:
            info.append((key, f"default ({_ratio(effective.get(key))})"))
    return info


def _specs_text(specs: Mapping[str, Any]) -> str:
    return ",".join(f"{key}={value}" for key, value in sorted(specs.items()))


def ipolicy_command(ipolicy: Mapping[str, Any], group: bool) -> str:
    """The options that recreate a policy's specs, as Ganeti's ``show-ispecs-cmd``
    prints them: ``--ipolicy-std-specs`` (cluster only) and
    ``--ipolicy-bounds-specs`` (``min:…/max:…``, bounds sets joined by ``//``), each
    with its keys sorted; empty when the policy sets no specs."""
    parts = []
    std = ipolicy.get(c.IPOLICY_STD) if not group else None
    if std:
        parts.append(f" --ipolicy-std-specs {_specs_text(std)}")
    bounds = [f"min:{_specs_text(mm[c.ISPECS_MIN])}/max:{_specs_text(mm[c.ISPECS_MAX])}"
              for mm in ipolicy.get(c.IPOLICY_MINMAX) or []
              if mm.get(c.ISPECS_MIN) and mm.get(c.ISPECS_MAX)]
    if bounds:
        parts.append(" --ipolicy-bounds-specs " + "//".join(bounds))
    return "".join(parts)

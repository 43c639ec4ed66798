"""Filled parameters: what an instance, node or group gets after inheritance.

Ganeti stores only what an object sets itself and fills the rest from the
levels above it (``objects.Cluster.Fill*``).  The functions here do the same
on our objects; they are pure, never change their arguments and return fresh
dicts, so LUs, RPC encoders and queries can share them.

Ganeti fills the cluster's own parameters with the built-in defaults once,
when it loads the config (``Cluster.UpgradeConfig``).  We keep the stored
config as it was written (it round-trips), so every function here puts the
built-in defaults of :mod:`ganeti.core.constants` below the cluster level:

========================  =====================================================
``fill_hv``               built-in → cluster ``hvparams[hv]`` →
                          cluster ``os_hvp[os][hv]`` → instance ``hvparams``
``fill_be``               built-in → cluster ``beparams["default"]`` → instance
``fill_nic``              built-in → cluster ``nicparams["default"]`` → NIC
``fill_nd``               built-in → cluster ``ndparams`` → group → node
``fill_disk_params``      per template: built-in → cluster → group
``fill_os``               cluster ``osparams[base]`` → ``osparams[os+variant]``
                          → instance (private ones likewise, secret ones as given)
``fill_ipolicy``          built-in → cluster ``ipolicy`` → group ``ipolicy``
========================  =====================================================

As in Ganeti, ``os_hvp`` is looked up by the instance's full OS name
(variant included); only OS parameters also use the base name.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from ganeti.core import constants
from ganeti.core.errors import ECODE_INVAL, OpPrereqError
from ganeti.core.objects import NIC, Cluster, Instance, Node, NodeGroup
from ganeti.core.params_merge import fill_dict
from ganeti.core.params_merge import fill_ipolicy as _fill_ipolicy

#: Ganeti's default parameter group name (``constants.PP_DEFAULT``).
PP_DEFAULT = "default"
#: Hypervisor parameters that are cluster-wide only (Ganeti's ``HVC_GLOBALS``).
HVC_GLOBALS = frozenset({"migration_port", "migration_bandwidth", "migration_mode",
                         "xen_cmd"})
#: Separator of an OS name and its variant (``debootstrap+buster``).
OS_VARIANT_DELIM = "+"


def _layers(layers: Iterable[Mapping[str, Any] | None],
            skip_keys: Iterable[str] = ()) -> dict[str, Any]:
    """Ganeti's repeated ``FillDict``: later layers override earlier ones."""
    skip = tuple(skip_keys)
    result: dict[str, Any] = {}
    for layer in layers:
        if layer:
            result = fill_dict(result, layer, skip)
    for key in skip:
        result.pop(key, None)
    return result


def os_base_name(os_name: str) -> str:
    """The OS name without its variant (Ganeti's ``OS.GetName``)."""
    return os_name.split(OS_VARIANT_DELIM, 1)[0]


def ipolicy_defaults() -> dict[str, Any]:
    """Ganeti's built-in instance policy (``IPOLICY_DEFAULTS``)."""
    return {
        constants.IPOLICY_MINMAX: [copy.deepcopy(constants.ISPECS_MINMAX_DEFAULTS)],
        constants.IPOLICY_STD: dict(constants.ISPECS_STD_DEFAULTS),
        constants.IPOLICY_DTS: sorted(constants.DISK_TEMPLATES),
        constants.IPOLICY_VCPU_RATIO: constants.IPOLICY_DEFAULT_VCPU_RATIO,
        constants.IPOLICY_SPINDLE_RATIO: constants.IPOLICY_DEFAULT_SPINDLE_RATIO,
    }


# -- hypervisor ---------------------------------------------------------------------------

def hv_defaults(cluster: Cluster, hypervisor: str, os_name: str | None = None,
                skip_keys: Iterable[str] = ()) -> dict[str, Any]:
    """The cluster's defaults for ``hypervisor`` (and ``os_name``'s os_hvp), Ganeti's
    ``GetHVDefaults``."""
    stack: list[Mapping[str, Any] | None] = [constants.HVC_DEFAULTS.get(hypervisor),
                                             cluster.hvparams.get(hypervisor)]
    if os_name is not None:
        stack.append(cluster.os_hvp.get(os_name, {}).get(hypervisor))
    return _layers(stack, skip_keys)


def fill_hv(cluster: Cluster, hypervisor: str, os_name: str | None,
            hvparams: Mapping[str, Any], skip_globals: bool = False) -> dict[str, Any]:
    """``hvparams`` filled from the cluster (Ganeti's ``SimpleFillHV``).

    With ``skip_globals`` the cluster-wide-only keys (:data:`HVC_GLOBALS`) are
    left out, also when ``hvparams`` sets them.
    """
    skip = HVC_GLOBALS if skip_globals else frozenset()
    return _layers([hv_defaults(cluster, hypervisor, os_name, skip), hvparams], skip)


def fill_instance_hv(cluster: Cluster, instance: Instance,
                     skip_globals: bool = False) -> dict[str, Any]:
    """An instance's full hypervisor parameters (Ganeti's ``FillHV``)."""
    return fill_hv(cluster, instance.hypervisor, instance.os, instance.hvparams, skip_globals)


# -- backend, NIC, node -------------------------------------------------------------------

def fill_be(cluster: Cluster, beparams: Mapping[str, Any]) -> dict[str, Any]:
    """``beparams`` filled from the cluster's default group (``SimpleFillBE``)."""
    return _layers([constants.BEC_DEFAULTS, cluster.beparams.get(PP_DEFAULT), beparams])


def fill_instance_be(cluster: Cluster, instance: Instance) -> dict[str, Any]:
    """An instance's full backend parameters (Ganeti's ``FillBE``)."""
    return fill_be(cluster, instance.beparams)


def fill_nic(cluster: Cluster, nicparams: Mapping[str, Any]) -> dict[str, Any]:
    """``nicparams`` filled from the cluster's default group (``SimpleFillNIC``)."""
    return _layers([constants.NICC_DEFAULTS, cluster.nicparams.get(PP_DEFAULT), nicparams])


def fill_instance_nic(cluster: Cluster, nic: NIC) -> dict[str, Any]:
    """A NIC's full parameters."""
    return fill_nic(cluster, nic.nicparams)


def fill_nd(cluster: Cluster, group: NodeGroup | None, node: Node | None = None
            ) -> dict[str, Any]:
    """Node parameters: cluster → group → node (Ganeti's ``FillND``/``FillNDGroup``).

    ``node`` None gives the group's filled parameters; ``group`` None skips the
    group level (a node whose group is unknown).
    """
    return _layers([constants.NDC_DEFAULTS, cluster.ndparams,
                    group.ndparams if group is not None else None,
                    node.ndparams if node is not None else None])


# -- disks --------------------------------------------------------------------------------

def fill_disk_params(cluster: Cluster, group: NodeGroup | None = None
                     ) -> dict[str, dict[str, Any]]:
    """Disk parameters of every template: cluster → group (``FillDiskParams``)."""
    result: dict[str, dict[str, Any]] = {}
    for template in sorted(constants.DISK_TEMPLATES):
        result[template] = _layers([
            constants.DISK_DT_DEFAULTS.get(template),
            cluster.diskparams.get(template),
            group.diskparams.get(template) if group is not None else None])
    return result


def fill_template_disk_params(cluster: Cluster, group: NodeGroup | None,
                              template: str) -> dict[str, Any]:
    """The filled disk parameters of one template."""
    return fill_disk_params(cluster, group).get(template, {})


# -- OS parameters ------------------------------------------------------------------------

def fill_os(cluster: Cluster, os_name: str | None, public: Mapping[str, Any],
            private: Mapping[str, Any] | None = None,
            secret: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """OS parameters filled from the cluster (Ganeti's ``SimpleFillOS``).

    Defaults come from the OS's base name, then from the full name with its
    variant.  Private parameters are filled only when ``private`` is given
    (from ``osparams_private_cluster``); secret ones have no defaults.  A key
    set at two visibilities is refused with ``OpPrereqError``.
    """
    base = os_base_name(os_name) if os_name is not None else None
    params_public = _layers([cluster.osparams.get(base or "") if base is not None else None,
                             cluster.osparams.get(os_name) if os_name is not None else None,
                             public])
    params_private: dict[str, Any] = {}
    if private is not None:
        private_cluster = cluster.osparams_private_cluster
        params_private = _layers([
            private_cluster.get(base) if base is not None else None,
            private_cluster.get(os_name) if os_name is not None else None,
            private])
    params_secret = dict(secret) if secret is not None else {}
    levels = (("public", params_public), ("private", params_private),
              ("secret", params_secret))
    seen: dict[str, list[str]] = {}
    for level, params in levels:
        for key in params:
            seen.setdefault(key, []).append(level)
    clashes = {k: v for k, v in seen.items() if len(v) > 1}
    if clashes:
        def keys(level: str) -> str:
            found = sorted(repr(k) for k, lv in clashes.items() if level in lv)
            return ", ".join(found) if found else "(none)"
        raise OpPrereqError(
            "Cannot assign multiple values to OS parameters.\n\n"
            "Conflicting OS parameters that would have been set by this operation:\n"
            f"- at public visibility:  {keys('public')}\n"
            f"- at private visibility: {keys('private')}\n"
            f"- at secret visibility:  {keys('secret')}\n", ECODE_INVAL)
    params_public.update(params_private)
    params_public.update(params_secret)
    return params_public


def fill_instance_os(cluster: Cluster, instance: Instance,
                     with_private: bool = False) -> dict[str, Any]:
    """An instance's OS parameters (private ones only when asked for)."""
    return fill_os(cluster, instance.os, instance.osparams,
                   instance.osparams_private if with_private else None)


# -- instance policy ----------------------------------------------------------------------

def fill_ipolicy(cluster: Cluster, group: NodeGroup | None = None) -> dict[str, Any]:
    """The effective instance policy: built-in → cluster → group (``FillIPolicy``).

    Keys a level sets replace the level below whole, except ``std``, which is
    merged key by key, as in Ganeti.
    """
    policy = _fill_ipolicy(ipolicy_defaults(), cluster.ipolicy)
    if group is not None:
        policy = _fill_ipolicy(policy, group.ipolicy)
    return policy

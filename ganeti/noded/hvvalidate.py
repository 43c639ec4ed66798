"""Hypervisor parameters checked on the node: Ganeti's ``ValidateParameters``,
served as the ``hypervisor_validate_params`` call.

The master checks the values (:func:`ganeti.core.hvchecks.check_syntax`); the
node checks what only it can see: the files and directories the parameters
name exist (``kernel_path``, ``initrd_path``, ``vnc_password_file``,
``mem_path``, ...), the ``security_domain`` user of ``security_model=user``
exists, ``vnc_bind_address`` and ``spice_bind`` are an address or an
interface of this node, and SPICE and VNC are not both configured.  The fake
hypervisor has nothing to check.

A path is looked for under the node's root first (a virtual node's files,
e.g. a VNC password file the master pushed) and then as given (the files
all nodes of a virtual cluster share, e.g. a kernel).  Messages are
Ganeti's: ``Parameter 'x' fails validation: ... (current value: '...')``.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Callable, Mapping
from typing import Any

from ganeti.core import constants, hvchecks, rpcdefs
from ganeti.core.paths import Paths
from ganeti.noded.backend.context import NodeContext, RPCFail


class ValidationError(Exception):
    """A parameter failed validation on this node; the message names it."""


def user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def interface_exists(name: str) -> bool:
    """Ganeti's IsValidInterface: the kernel knows a network interface of that name."""
    return "/" not in name and os.path.exists(os.path.join("/sys/class/net", name))


def _candidates(paths: Paths, path: str) -> list[str]:
    local = rpcdefs.from_wire_path(paths.root, path)
    return [local] if local == path else [local, path]


_NODE_TESTS: dict[str, tuple[Callable[[str], bool], str]] = {
    hvchecks.NODE_FILE: (os.path.isfile, "not found or not a file"),
    hvchecks.NODE_DIR: (os.path.isdir, "not found or not a directory"),
    hvchecks.NODE_FILE_OR_URL: (os.path.isfile, "not found or not a file or URL"),
}


def validate(paths: Paths, hypervisor: str, hvparams: Mapping[str, Any],
             has_user: Callable[[str], bool] = user_exists,
             has_interface: Callable[[str], bool] = interface_exists) -> None:
    """Check ``hvparams`` (filled) of ``hypervisor`` on this node; blocking (stats files).

    Raises :class:`ValidationError` naming the first parameter that fails.
    """
    if hypervisor not in constants.HYPER_TYPES:
        raise ValidationError(f"Unknown hypervisor type {hypervisor!r:.40}")
    for name, kind in hvchecks.node_checks(hypervisor).items():
        value = hvparams.get(name)
        if hvchecks.unspecified(value):
            continue
        test, why = _NODE_TESTS[kind]
        if kind == hvchecks.NODE_FILE_OR_URL and hvchecks.is_url(value):
            continue
        if not isinstance(value, str) or not any(test(p) for p in _candidates(paths, value)):
            raise ValidationError(f"Parameter '{name}' fails validation: {why} (current "
                                  f"value: '{value}')")
    if hypervisor == constants.HT_KVM:
        _validate_kvm(hvparams, has_user, has_interface)


def _validate_kvm(hv: Mapping[str, Any], has_user: Callable[[str], bool],
                  has_interface: Callable[[str], bool]) -> None:
    """Ganeti's validate_security_model, validate_vnc_parameters and the part of
    validate_spice_parameters that needs no ``kvm --help``."""
    if hv.get("security_model") == hvchecks.SM_USER:
        user = hv.get("security_domain") or ""
        if not has_user(user):
            raise ValidationError(f"Parameter 'security_domain' fails validation: Unknown "
                                  f"security domain user {user}")
    bind = hv.get("vnc_bind_address")
    if bind and not (hvchecks.is_ip(bind) or hvchecks.is_norm_abs_path(bind)
                     or has_interface(bind)):
        raise ValidationError("Parameter 'vnc_bind_address' fails validation: VNC: The "
                              "vnc_bind_address parameter must be either a valid IP "
                              "address, an interface name, or an absolute path")
    spice = hv.get("spice_bind")
    if spice:
        if bind:
            raise ValidationError("Parameter 'spice_bind' fails validation: Both SPICE and "
                                  "VNC are configured, but only one of them can be used at "
                                  "a given time")
        if not (hvchecks.is_ip(spice) or has_interface(spice)):
            raise ValidationError("Parameter 'spice_bind' fails validation: SPICE: The "
                                  "spice_bind parameter must be either a valid IP address "
                                  "or interface name")


async def hypervisor_validate_params(ctx: NodeContext, hvname: str,
                                     hvfull: dict[str, Any]) -> None:
    """The node call: None, or a failure whose message names the parameter."""
    try:
        await ctx.run(validate, ctx.paths, hvname, hvfull)
    except ValidationError as err:
        raise RPCFail(str(err)) from None

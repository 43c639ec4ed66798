"""Instance calls.  Only declarations that carry information yet: the node side of
instances comes with the next issue, so noded answers these with 404 until then.

``instance_os_add`` is Ganeti's longest call (a whole day: an OS installation
copies an image) and shows the master-side encoder: the instance travels with
its filled parameters (:func:`ganeti.core.rpcdefs.encoders.instance_dict`).
"""

from __future__ import annotations

from typing import Any

from ganeti.core.rpcdefs.base import RPC_TMO_1DAY, RpcArg, RpcCall, call, is_int
from ganeti.core.rpcdefs.encoders import instance_dict


def _is_instance_dict(v: Any) -> bool:
    return (isinstance(v, dict) and isinstance(v.get("name"), str)
            and all(isinstance(v.get(k), dict) for k in ("hvparams", "beparams", "osparams")))


CALLS: list[RpcCall] = [
    call("instance_os_add", RPC_TMO_1DAY,
         "Run the instance's OS create (or reinstall) scripts (not served yet).",
         RpcArg("instance", _is_instance_dict,
                "an instance object with filled hvparams, beparams and osparams",
                encode=instance_dict),
         RpcArg("reinstall", lambda v: isinstance(v, bool), "a boolean"),
         RpcArg("debug", lambda v: is_int(v) and 0 <= v <= 2, "a debug level (0..2)")),
]

"""Instance allocators on the master: the version-2 input built from the config and live
node data (:mod:`.build`), and external allocator programs found on the iallocator
search path and run as child processes (:mod:`.runner`).

The model, the requests, the wire format and the answer checks are pure and live in
:mod:`ganeti.core.placement`.
"""

__all__ = ["build", "runner"]

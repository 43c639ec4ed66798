"""Placement: the cluster model an instance allocator works on, pure (no I/O, no Twisted).

- :mod:`.model`: nodes (memory, disk, CPUs, spindles), groups (with their
  instance policy) and instances (their nodes and resources), frozen dataclasses;
- :mod:`.requests`: the request types of Ganeti's iallocator protocol
  (allocate, multi-allocate, relocate, node-evacuate, change-group,
  allocate-secondary) and the result shapes each one answers with;
- :mod:`.wire`: the iallocator version-2 input (a dict) to the model and
  back, and the allocator's answer (JSON text) checked against the request;
- :mod:`.score`: the cluster score an allocator minimises (htools' terms).

The master builds the model from its config and live node data and runs
external allocators (:mod:`ganeti.master.iallocator`); a built-in allocator
(issue 29) works on the same model.
"""

__all__ = ["model", "requests", "score", "wire"]

"""The job queue: durable job store, scheduling, filters, events, LUXI job methods
and the processor that runs opcodes under their locks."""

__all__ = [
    "events",
    "filters",
    "jobqueue",
    "jobrecovery",
    "jobstore",
    "luxi_jobs",
    "processor",
    "scheduler",
]

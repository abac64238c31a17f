"""How much work one ScopeWorker takes at once: Temporal slot limits from the CPU count.

A Temporal worker takes a task whenever it has a free slot; Temporal's defaults (100
workflow tasks, each on its own thread, and 100 activities) let one Python process take
far more than its cores can run. Workflow tasks are CPU work under the GIL: a hundred
threads running them starve the event loop the activities run on, so heartbeats come
late, and a `scope.model` or `scope.tool` call that outlives its heartbeat timeout is an
unknown Effect only a person can settle. Activities here wait on models and tools
(I/O), so they get more slots than workflow tasks.

`ScopeWorker` therefore sizes its slots from the CPU count (Temporal's own fixed-size
tuner), unless its caller passes `tuner=` or any `max_concurrent_*` option (a
resource-based tuner, for instance: `temporalio.worker.WorkerTuner.create_resource_based`).
Work beyond the slots waits on the server's task queue, where no timeout of ours runs
(activities have no schedule-to-start timeout): an overloaded worker slows, it does not
strand calls.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

WORKFLOW_TASKS_PER_CPU = 4
"""Workflow tasks run at once per usable CPU (each holds a thread and the GIL)."""

ACTIVITIES_PER_CPU = 32
"""Activities run at once per usable CPU (mostly waiting on a model or a tool)."""

_SLOT_OPTIONS = (
    "tuner",
    "max_concurrent_workflow_tasks",
    "max_concurrent_activities",
    "max_concurrent_local_activities",
    "max_concurrent_nexus_tasks",
)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def sized_worker_options(worker_options: Mapping[str, Any], cpus: int) -> dict[str, Any]:
    """`worker_options` with slot limits for `cpus` CPUs added, unless it sizes slots itself.

    Any of `tuner` and the `max_concurrent_*` options means the caller sizes the worker:
    the options are returned unchanged (Temporal refuses a tuner beside slot limits).
    """
    options = dict(worker_options)
    if any(options.get(name) is not None for name in _SLOT_OPTIONS):
        return options
    options["max_concurrent_workflow_tasks"] = WORKFLOW_TASKS_PER_CPU * cpus
    options["max_concurrent_activities"] = ACTIVITIES_PER_CPU * cpus
    return options


__all__ = [
    "ACTIVITIES_PER_CPU",
    "WORKFLOW_TASKS_PER_CPU",
    "sized_worker_options",
    "usable_cpus",
]

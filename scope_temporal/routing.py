"""Where tool bodies run: the task queues Definitions route tools to, and whether anybody
serves them.

A tool declared with `@tool(task_queue="gpu")` runs only on the workers polling `gpu`
(`ScopeWorker(role="activities", task_queue="gpu")`). Routing is operations, not
behaviour: it is not part of a Definition's digest, and the pool serves the same
Definitions, so the digest and authority checks of a call are the same on every pool.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.service import RPCError

from scope_temporal.definition import Definition

_RECENT_SECONDS = 75
"""A live worker polls again at least every minute (long polls); the server lists one
for minutes after it stopped, so only recent pollers count."""


def routed_tools(definitions: Iterable[Definition], own_queue: str) -> dict[str, tuple[str, ...]]:
    """The task queues other than `own_queue` that `definitions` route tools to, each with
    the names of its tools (sorted)."""
    queues: dict[str, set[str]] = {}
    for definition in definitions:
        for spec in definition.tools.tools + definition.tools.deferred:
            if spec.task_queue is not None and spec.task_queue != own_queue:
                queues.setdefault(spec.task_queue, set()).add(spec.name)
    return {queue: tuple(sorted(tools)) for queue, tools in sorted(queues.items())}


async def has_pollers(
    client: Client, task_queue: str, kind: TaskQueueType.ValueType
) -> bool | None:
    """Whether a worker polled `task_queue` for `kind` tasks recently; None when the
    server cannot tell."""
    try:
        response = await client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=client.namespace,
                task_queue=TaskQueue(name=task_queue),
                task_queue_type=kind,
            )
        )
    except RPCError:
        return None
    now = time.time()
    return any(now - p.last_access_time.ToSeconds() < _RECENT_SECONDS for p in response.pollers)


async def unserved_queues(
    client: Client, queues: dict[str, tuple[str, ...]]
) -> dict[str, tuple[str, ...]]:
    """Those of `queues` (queue -> tools) that no worker polls for activities now."""
    unserved = {}
    for queue, tools in queues.items():
        if await has_pollers(client, queue, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY) is False:
            unserved[queue] = tools
    return unserved


def unserved_warning(queue: str, tools: tuple[str, ...]) -> str:
    """What to do about a tool queue nobody serves."""
    return (
        f"no worker serves task queue {queue!r}, where tool(s) {', '.join(tools)} run: "
        f"start one (scope-temporal worker --role activities --task-queue {queue}, with "
        "the same app). Until then their calls wait, and each becomes unknown after its "
        "timeout; none runs on another queue."
    )


__all__ = ["has_pollers", "routed_tools", "unserved_queues", "unserved_warning"]

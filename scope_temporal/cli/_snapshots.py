"""Reading an Interaction's snapshot from the CLI, with errors a person can act on.

The snapshot is a query: a worker serving the Interaction's task queue answers it. These
helpers tell "no such Interaction" from "no worker answers" instead of waiting blindly.
"""

from __future__ import annotations

import asyncio

import click
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowQueryFailedError
from temporalio.service import RPCError, RPCStatusCode

from scope_temporal.cli._connect import has_worker
from scope_temporal.client import InteractionHandle
from scope_temporal.errors import ScopeError
from scope_temporal.interaction.snapshot import TreeSnapshot


async def describe(client: Client, handle: InteractionHandle) -> tuple[str, bool]:
    """`(task queue, ended)` of the Interaction.

    Raises:
        click.ClickException: there is no such Interaction.
    """
    try:
        described = await client.get_workflow_handle(handle.id).describe()
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            raise click.ClickException(f"no interaction {handle.id!r}") from None
        raise click.ClickException(f"cannot describe {handle.id!r}: {error}") from None
    return described.task_queue, described.status != WorkflowExecutionStatus.RUNNING


async def snapshot_or_none(handle: InteractionHandle) -> TreeSnapshot | None:
    """The live snapshot, or None when no worker answers the query in time (a finished
    Interaction gets a shorter wait: its status and output are in its history anyway).

    Raises:
        click.ClickException: there is no such Interaction.
    """
    client = handle.scope.client
    task_queue, ended = await describe(client, handle)
    if await has_worker(client, task_queue) is False:
        return None
    try:
        return await asyncio.wait_for(handle.snapshot(), 3 if ended else 8)
    except (TimeoutError, ScopeError, WorkflowQueryFailedError, RPCError):
        return None


async def require_snapshot(handle: InteractionHandle) -> TreeSnapshot:
    """The live snapshot.

    Raises:
        click.ClickException: no such Interaction, or no worker answers for it.
    """
    tree = await snapshot_or_none(handle)
    if tree is None:
        task_queue, _ = await describe(handle.scope.client, handle)
        raise click.ClickException(
            f"no worker answered for {handle.id!r}: start one on task queue {task_queue!r} "
            "(scope-temporal worker)"
        )
    return tree


__all__ = ["describe", "require_snapshot", "snapshot_or_none"]

"""Reading a running Interaction tree through a Temporal client (what `InteractionHandle`
shows hosts): the snapshot of every process in it, and the text a model call streams."""

from __future__ import annotations

from datetime import timedelta

from temporalio.client import Client, WorkflowQueryFailedError
from temporalio.service import RPCError, RPCStatusCode

from scope_temporal import errors, names
from scope_temporal.interaction.snapshot import ProcessSnapshot, TaskSnapshot, TreeSnapshot
from scope_temporal.interaction.task_values import task_process
from scope_temporal.models.streaming import LiveText
from scope_temporal.tasks import TemporalTaskAccess


async def snapshot(client: Client, root_id: str, timeout: timedelta | None) -> TreeSnapshot:
    """The root, every active child process, and every background task launched in the
    tree (running or ended), each queried live with `timeout`.

    Raises:
        InteractionNotFound: no workflow has this id.
        ScopeError: the root could not be queried (no worker answered in time).
    """
    root = await _query(client, root_id, timeout, required=True)
    assert root is not None
    processes: list[ProcessSnapshot] = []
    frontier = [root]
    while frontier:
        process = frontier.pop(0)
        processes.append(process)
        for child_id in process.active_children:
            child = await _query(client, child_id, timeout, required=False)
            if child is not None:  # a child that ended meanwhile has nothing to add
                frontier.append(child)
        for task_id in process.background_tasks:
            task = await _task(client, task_id, timeout)
            if task is not None:
                processes.append(task_process(task, process.definition))
    return TreeSnapshot(root=root, processes=tuple(processes))


async def _task(client: Client, task_id: str, timeout: timedelta | None) -> TaskSnapshot | None:
    access = TemporalTaskAccess(client, timeout=timeout or timedelta(seconds=10))
    try:
        return await access.snapshot(task_id)
    except (RPCError, WorkflowQueryFailedError):
        return None  # not reachable right now: the next snapshot shows it


async def _query(
    client: Client, process_id: str, timeout: timedelta | None, *, required: bool
) -> ProcessSnapshot | None:
    try:
        result = await client.get_workflow_handle(process_id).query(
            names.SNAPSHOT_QUERY, result_type=ProcessSnapshot, rpc_timeout=timeout
        )
    except RPCError as error:
        if not required:
            return None
        if error.status == RPCStatusCode.NOT_FOUND:
            raise errors.InteractionNotFound(
                f"No Interaction {process_id!r} (check the id and the namespace)."
            ) from error
        raise errors.ScopeError(
            f"Interaction {process_id!r} could not be queried: {error.message}. Is a "
            "worker serving its task queue?",
            code=errors.PROTOCOL_INVALID,
        ) from error
    except WorkflowQueryFailedError as error:
        if not required:
            return None
        raise errors.ScopeError(
            f"Interaction {process_id!r} could not answer: {error.message}",
            code=errors.PROTOCOL_INVALID,
        ) from error
    assert isinstance(result, ProcessSnapshot)
    return result


async def live_text(client: Client, process_id: str) -> LiveText | None:
    """What the model call in flight of `process_id` has streamed so far: the latest
    heartbeat of its `scope.model` activity (None when none runs or it does not stream)."""
    try:
        description = await client.get_workflow_handle(process_id).describe()
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return None
        raise
    converter = client.data_converter
    for pending in description.raw_description.pending_activities:
        details = pending.heartbeat_details.payloads
        if pending.activity_type.name != names.MODEL_ACTIVITY or not details:
            continue
        [live] = await converter.decode(details[:1], [LiveText])
        if isinstance(live, LiveText):
            return live
    return None


__all__ = ["live_text", "snapshot"]

"""Replay recorded histories against the current code and Definitions.

Use it in CI to prove a change keeps running Interactions replayable: fetch (or check in)
histories, then `await replay_history(history, definitions)`; a non-determinism error or a
changed Definition shows up as `result.replay_failure`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from temporalio.client import WorkflowHistory
from temporalio.converter import DataConverter, StorageDriver
from temporalio.exceptions import ApplicationError
from temporalio.worker import (
    ExecuteWorkflowInput,
    Interceptor,
    Replayer,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowReplayResult,
)

from scope_temporal import errors
from scope_temporal.converter import scope_data_converter
from scope_temporal.definition import Definition
from scope_temporal.errors import ScopeError
from scope_temporal.payload_limits import DEFAULT_PAYLOAD_LIMIT_BYTES
from scope_temporal.registry import Registry
from scope_temporal.workflows.background_task import BackgroundTaskWorkflow
from scope_temporal.workflows.interaction import InteractionWorkflow
from scope_temporal.workflows.serving import RegistryInterceptor
from scope_temporal.workflows.session import SessionWorkflow
from scope_temporal.workflows.tool_call import ToolCallWorkflow


def history_task_queue(history: WorkflowHistory) -> str:
    """The task queue the recorded workflow ran on."""
    started = history.events[0].workflow_execution_started_event_attributes
    return started.task_queue.name


async def replay_history(
    history: WorkflowHistory,
    definitions: Iterable[Definition],
    *,
    payload_limit_bytes: int = DEFAULT_PAYLOAD_LIMIT_BYTES,
    storage: StorageDriver | None = None,
    data_converter: DataConverter | None = None,
) -> WorkflowReplayResult:
    """Replay one Interaction, ToolCall, BackgroundTask or Session history with these
    Definitions registered.

    Args:
        history: the recorded history.
        definitions: the Definitions the recording worker served.
        payload_limit_bytes: the recording worker's limit. Only histories recorded before
            Interactions recorded their settings need it: newer ones replay with the
            limit and the served delegates they recorded, whatever is given here.
        storage: the external storage the recording worker offloaded payloads to, if any.
        data_converter: the recording worker's client converter, when it carried a payload
            codec (e.g. encryption): histories are decoded with it.

    Never raises for a replay failure: inspect `result.replay_failure`. When the replay
    failed because the workflow itself ended with a classified failure where the history
    goes on (e.g. `interaction.definition.changed`), `replay_failure` is a `ScopeError`
    with that `.code`, caused by Temporal's non-determinism error; otherwise it is the
    error Temporal reported.
    """
    registry = Registry(definitions, payload_limit=payload_limit_bytes)
    failures = _ClassifiedFailures()
    replayer = Replayer(
        workflows=[
            InteractionWorkflow,
            ToolCallWorkflow,
            BackgroundTaskWorkflow,
            SessionWorkflow,
        ],
        data_converter=scope_data_converter(data_converter, storage=storage),
        interceptors=[RegistryInterceptor(registry), failures],
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    if result.replay_failure is None or not failures.seen:
        return result
    code, message = failures.seen[-1]
    explained = ScopeError(f"The replay ended the workflow with {code}: {message}", code=code)
    explained.__cause__ = result.replay_failure
    return dataclasses.replace(result, replay_failure=explained)


class _ClassifiedFailures(Interceptor):
    """Notes each classified failure (`errors` code) a replayed workflow ends with."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        seen = self.seen

        class Noting(WorkflowInboundInterceptor):
            async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
                try:
                    return await super().execute_workflow(input)
                except ApplicationError as error:
                    if error.type in errors.CODE_KINDS:
                        seen.append((error.type, error.message))
                    raise

        return Noting

"""Workflow `scope.ToolCall`. Everything here runs inside the workflow: deterministic.

One child per ordinary tool call; it owns that call's Effect. A thin shell around
`ToolCallDriver` (the same driver `LocalRunner` runs), with `TemporalTransport`; it takes
the host's inputs as every process does (`process`), and refuses a steer.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import RawValue

from scope_temporal import names
from scope_temporal.driver.tool_call import ToolCallDriver
from scope_temporal.interaction.effects import CallSettled
from scope_temporal.outputs import Failure
from scope_temporal.payloads import ToolCallInput, ToolInputAnswer
from scope_temporal.workflows import inputs, serving
from scope_temporal.workflows.events import NoEvents, SentEvents
from scope_temporal.workflows.outcomes import (
    failure_error,
    refused_as_update,
    scope_workflow,
    update_rejection,
)
from scope_temporal.workflows.process import ProcessWorkflow
from scope_temporal.workflows.task_commands import refuse_update_after_commands
from scope_temporal.workflows.temporal import TemporalTransport


@scope_workflow(names.TOOL_CALL_WORKFLOW)
class ToolCallWorkflow(ProcessWorkflow):
    """The Tool call Process of one logical call."""

    @workflow.init
    def __init__(self, input: ToolCallInput) -> None:
        # Built before any handler runs: an early answer or query finds the driver.
        events_to = input.route.events_to
        events = SentEvents(events_to) if events_to is not None else NoEvents()
        self._driver = ToolCallDriver(
            input, TemporalTransport(events), limit=serving.current().payload_limit
        )

    @workflow.run
    async def run(self, input: ToolCallInput) -> CallSettled:
        # a cancellation of this Process (its parent was cancelled) ends it canceled;
        # the cancelled parent never collects this outcome
        settled = await self._driver.run()
        if isinstance(settled, Failure):  # its core failed closed: fail with the code
            raise failure_error(settled)
        return settled

    def _process(self) -> ToolCallDriver:
        return self._driver

    # --- signals and updates (besides those every process takes: `process`) ----------

    @workflow.update(name=names.TOOL_INPUT)
    async def tool_input_update(self, raw: RawValue) -> bool:
        input = inputs.decode(raw, ToolInputAnswer, "tool_input")
        with refused_as_update():
            return await self._driver.answer_update(input)

    @tool_input_update.validator
    def _validate_tool_input(self, raw: RawValue) -> None:
        refuse_update_after_commands()
        with refused_as_update():
            self._driver.validate_answer(inputs.decode(raw, ToolInputAnswer, "tool_input"))

    @workflow.signal(name=names.STEER)
    def steer_signal(self, raw: RawValue) -> None:
        claimed = inputs.claimed_id(raw, "signal_id")
        self._driver.reject(claimed, "steer", self._driver.steer_refusal())

    @workflow.update(name=names.STEER)
    def steer_update(self, raw: RawValue) -> bool:
        raise update_rejection(self._driver.steer_refusal())

    @steer_update.validator
    def _validate_steer(self, raw: RawValue) -> None:
        raise update_rejection(self._driver.steer_refusal())

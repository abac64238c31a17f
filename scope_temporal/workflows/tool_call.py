"""Workflow `scope.ToolCall`. Everything here runs inside the workflow: deterministic.

One child per ordinary tool call; it owns that call's Effect. A thin shell around
`ToolCallDriver` (the same driver `LocalRunner` runs): it reads each signal's and
update's raw payload and hands it to the driver, with `TemporalTransport`.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import RawValue

from scope_temporal import names
from scope_temporal.driver.tool_call import ToolCallDriver
from scope_temporal.errors import ScopeError
from scope_temporal.interaction.effects import CallSettled
from scope_temporal.interaction.snapshot import ProcessSnapshot
from scope_temporal.outputs import Failure
from scope_temporal.payloads import ControlInput, ResolveInput, ToolCallInput, ToolInputAnswer
from scope_temporal.workflows import inputs, serving
from scope_temporal.workflows.events import NoEvents, SentEvents
from scope_temporal.workflows.outcomes import failure_error, update_rejection
from scope_temporal.workflows.task_commands import (
    CommandsInTask,
    refuse_update_after_commands,
)
from scope_temporal.workflows.temporal import TemporalTransport


# ScopeError: deterministic framework errors fail the workflow with their code.
# Not sandboxed: no user code runs here, and the sandbox would only cost CPU (see the
# note on InteractionWorkflow).
@workflow.defn(
    name=names.TOOL_CALL_WORKFLOW,
    failure_exception_types=[ScopeError],
    sandboxed=False,
)
class ToolCallWorkflow(CommandsInTask):
    """The Tool call Process of one logical call."""

    @workflow.init
    def __init__(self, input: ToolCallInput) -> None:
        # Built before any handler runs: an early answer or query finds the driver.
        events = SentEvents(input.events_to) if input.events_to is not None else NoEvents()
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

    # --- signals and updates ---------------------------------------------------------

    # Handlers take the raw payload: a malformed one is refused like any bad input
    # (recorded, or raised to the update's caller), never dropped (see `inputs`).

    @workflow.signal(name=names.TOOL_INPUT)
    def tool_input_signal(self, raw: RawValue) -> None:
        try:
            input = inputs.decode(raw, ToolInputAnswer, "tool_input")
        except ScopeError as error:
            self._driver.reject(inputs.claimed_id(raw, "answer_id"), "tool_input", error)
            return
        self._driver.tool_input_signal(input)

    @workflow.update(name=names.TOOL_INPUT)
    async def tool_input_update(self, raw: RawValue) -> bool:
        input = inputs.decode(raw, ToolInputAnswer, "tool_input")
        try:
            return await self._driver.answer_update(input)
        except ScopeError as error:
            raise update_rejection(error) from None

    @tool_input_update.validator
    def _validate_tool_input(self, raw: RawValue) -> None:
        refuse_update_after_commands()
        try:
            self._driver.validate_answer(inputs.decode(raw, ToolInputAnswer, "tool_input"))
        except ScopeError as error:
            raise update_rejection(error) from None

    @workflow.signal(name=names.RESOLVE)
    def resolve_signal(self, raw: RawValue) -> None:
        try:
            input = inputs.decode(raw, ResolveInput, "resolve")
        except ScopeError as error:
            self._driver.reject(inputs.claimed_id(raw, "signal_id"), "resolve", error)
            return
        self._driver.resolve_signal(input)

    @workflow.update(name=names.RESOLVE)
    async def resolve_update(self, raw: RawValue) -> None:
        input = inputs.decode(raw, ResolveInput, "resolve")
        try:
            await self._driver.resolve_update(input)
        except ScopeError as error:
            raise update_rejection(error) from None

    @resolve_update.validator
    def _validate_resolve(self, raw: RawValue) -> None:
        refuse_update_after_commands()
        try:
            self._driver.validate_resolve(inputs.decode(raw, ResolveInput, "resolve"))
        except ScopeError as error:
            raise update_rejection(error) from None

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

    @workflow.signal(name=names.PAUSE)
    def pause(self, raw: RawValue = inputs.NO_PAYLOAD) -> None:
        try:
            inputs.decode_optional(raw, ControlInput, "pause")
        except ScopeError as error:
            self._driver.reject("", "pause", error)
            return
        self._driver.pause()

    @workflow.signal(name=names.RESUME)
    def resume(self, raw: RawValue = inputs.NO_PAYLOAD) -> None:
        try:
            inputs.decode_optional(raw, ControlInput, "resume")
        except ScopeError as error:
            self._driver.reject("", "resume", error)
            return
        self._driver.resume()

    @workflow.query(name=names.SNAPSHOT_QUERY)
    def snapshot(self) -> ProcessSnapshot:
        return self._driver.snapshot()

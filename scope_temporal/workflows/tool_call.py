"""Workflow `scope.ToolCall`. Everything here runs inside the workflow: deterministic.

One child per ordinary tool call; it owns that call's Effect. It runs the `scope.tool`
activity once per entry into the body (never retried), holds an input wait until a valid
answer arrives, holds an unknown outcome until the host settles it, and returns exactly
one definite settlement to its parent.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import RawValue

from scope_temporal import errors, names
from scope_temporal.errors import ScopeError
from scope_temporal.interaction.effects import CallSettled, ToolSettlement
from scope_temporal.interaction.snapshot import ProcessSnapshot
from scope_temporal.interaction.tool_call import ToolCallMachine
from scope_temporal.payloads import ControlInput, ResolveInput, ToolCallInput, ToolInputAnswer
from scope_temporal.telemetry import workflow_counters
from scope_temporal.workflows import inputs
from scope_temporal.workflows.calls import attempt_tool
from scope_temporal.workflows.outcomes import update_rejection


# ScopeError: deterministic framework errors fail the workflow with their code.
# Not sandboxed: no user code runs here, and the sandbox would only cost CPU (see the
# note on InteractionWorkflow).
@workflow.defn(
    name=names.TOOL_CALL_WORKFLOW,
    failure_exception_types=[ScopeError],
    sandboxed=False,
)
class ToolCallWorkflow:
    """The Tool call Process of one logical call."""

    @workflow.init
    def __init__(self, input: ToolCallInput) -> None:
        # Built before any handler runs: an early answer or query finds the machine.
        self._machine = ToolCallMachine.start(input.request)
        if input.first_outcome is not None:
            # promoted by an Interaction that already ran the first attempt itself
            self._machine.next_attempt()
            self._machine.on_outcome(input.first_outcome)
            workflow_counters.record_outcome(input.request, input.first_outcome)  # telemetry
        if input.paused:
            self._machine.pause()

    @workflow.run
    async def run(self, input: ToolCallInput) -> CallSettled:
        machine = self._machine
        while machine.outcome is None:
            attempt = machine.next_attempt()
            self._show(machine)
            if attempt is None:
                await workflow.wait_condition(
                    lambda: (
                        machine.outcome is not None
                        or (machine.phase == "ready" and not machine.paused)
                    )
                )
                continue
            # a cancellation of this Process (its parent was cancelled) ends it canceled;
            # the cancelled parent never collects this outcome
            outcome = await attempt_tool(
                attempt, start_to_close=input.start_to_close, heartbeat=input.heartbeat
            )
            machine.on_outcome(outcome)
            workflow_counters.record_outcome(input.request, outcome)  # telemetry
        self._show(machine)
        return CallSettled(effect_id=input.request.effect_id, outcome=machine.outcome)

    def _show(self, machine: ToolCallMachine) -> None:
        snap = machine.snapshot()
        detail = f"**{snap.status}** · entries {snap.tool_entries}"
        if snap.pending_tool_inputs:
            wait = snap.pending_tool_inputs[0]
            detail += f" · waiting for input `{wait.wait_id}`: {wait.prompt_text}"
        if snap.unknown_effects:
            detail += f" · outcome unknown: {snap.unknown_effects[0].diagnostic}"
        workflow.set_current_details(detail)

    # --- signals and updates ---------------------------------------------------------

    # Handlers take the raw payload: a malformed one is refused like any bad input
    # (recorded, or raised to the update's caller), never dropped (see `inputs`).

    @workflow.signal(name=names.TOOL_INPUT)
    def tool_input_signal(self, raw: RawValue) -> None:
        machine = self._machine
        try:
            input = inputs.decode(raw, ToolInputAnswer, "tool_input")
            inputs.check_size(input, "The answer")
            machine.answer(input.wait_id, input.answer_id, input.response)
        except ScopeError as error:
            machine.record_rejected(inputs.claimed_id(raw, "answer_id"), "tool_input", error)

    @workflow.update(name=names.TOOL_INPUT)
    async def tool_input_update(self, raw: RawValue) -> bool:
        input = inputs.decode(raw, ToolInputAnswer, "tool_input")
        machine = self._machine
        # On replay an update can be applied before the activity outcome that opened the
        # wait, when both fall in one workflow task: wait for the wait to be recorded.
        await workflow.wait_condition(lambda: machine.phase != "running")
        try:
            return machine.answer(input.wait_id, input.answer_id, input.response)
        except ScopeError as error:
            raise update_rejection(error) from None

    @tool_input_update.validator
    def _validate_tool_input(self, raw: RawValue) -> None:
        try:
            input = inputs.decode(raw, ToolInputAnswer, "tool_input")
            inputs.check_size(input, "The answer")
            self._machine.check_answer(input.wait_id, input.answer_id, input.response)
        except ScopeError as error:
            raise update_rejection(error) from None

    @workflow.signal(name=names.RESOLVE)
    def resolve_signal(self, raw: RawValue) -> None:
        machine = self._machine
        try:
            input = inputs.decode(raw, ResolveInput, "resolve")
            inputs.check_size(input, "The settlement")
            if not isinstance(input.settlement, ToolSettlement):
                raise errors.SettlementMismatch("A model settlement goes to its Interaction.")
            machine.resolve(input.settlement)
            workflow_counters.record_settlement(input.settlement)  # telemetry
        except ScopeError as error:
            machine.record_rejected(inputs.claimed_id(raw, "signal_id"), "resolve", error)

    @workflow.update(name=names.RESOLVE)
    async def resolve_update(self, raw: RawValue) -> None:
        settlement = inputs.decode(raw, ResolveInput, "resolve").settlement
        assert isinstance(settlement, ToolSettlement)
        machine = self._machine
        # See tool_input_update: wait until the unknown outcome is recorded.
        await workflow.wait_condition(lambda: machine.phase != "running")
        try:
            machine.resolve(settlement)
        except ScopeError as error:
            raise update_rejection(error) from None
        workflow_counters.record_settlement(settlement)  # telemetry

    @resolve_update.validator
    def _validate_resolve(self, raw: RawValue) -> None:
        try:
            input = inputs.decode(raw, ResolveInput, "resolve")
            inputs.check_size(input, "The settlement")
            if not isinstance(input.settlement, ToolSettlement):
                raise errors.SettlementMismatch(
                    "A model settlement must be sent to its Interaction (unknown.process_id)."
                )
            self._machine.check_resolution(input.settlement)
        except ScopeError as error:
            raise update_rejection(error) from None

    @workflow.signal(name=names.STEER)
    def steer_signal(self, raw: RawValue) -> None:
        claimed = inputs.claimed_id(raw, "signal_id")
        self._machine.record_rejected(claimed, "steer", self._steer_elsewhere())

    @workflow.update(name=names.STEER)
    def steer_update(self, raw: RawValue) -> bool:
        raise update_rejection(self._steer_elsewhere())

    @steer_update.validator
    def _validate_steer(self, raw: RawValue) -> None:
        raise update_rejection(self._steer_elsewhere())

    def _steer_elsewhere(self) -> ScopeError:
        parent = self._machine.state.request.parent_id
        return errors.InvalidSignal(
            f"A tool call takes no steer; steer its Interaction {parent!r} (it never answers "
            "an input wait: answer with scope.tool_input)."
        )

    @workflow.signal(name=names.PAUSE)
    def pause(self, raw: RawValue = inputs.NO_PAYLOAD) -> None:
        try:
            inputs.decode_optional(raw, ControlInput, "pause")
        except ScopeError as error:
            self._machine.record_rejected("", "pause", error)
            return
        self._machine.pause()

    @workflow.signal(name=names.RESUME)
    def resume(self, raw: RawValue = inputs.NO_PAYLOAD) -> None:
        try:
            inputs.decode_optional(raw, ControlInput, "resume")
        except ScopeError as error:
            self._machine.record_rejected("", "resume", error)
            return
        self._machine.resume()

    @workflow.query(name=names.SNAPSHOT_QUERY)
    def snapshot(self) -> ProcessSnapshot:
        return self._machine.snapshot()

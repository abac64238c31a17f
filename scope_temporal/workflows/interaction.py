"""Workflow `scope.Interaction`. Everything here runs inside the workflow: deterministic.

A thin driver of `InteractionMachine`: it starts the effects the machine asks for (the
`scope.model` activity, `scope.ToolCall` and Delegate children), feeds each settlement
back, and maps signals/updates onto the machine. It never decides anything the machine
decides. An ambiguous model activity becomes an unknown Effect; the workflow then just
waits for `scope.resolve`.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta  # deterministic: a value type, no clock
from typing import Any, Literal

from temporalio import workflow
from temporalio.common import RawValue

from scope_temporal import errors, names
from scope_temporal.errors import ScopeError
from scope_temporal.interaction.effects import (
    CallModel,
    ModelSettlement,
    StartDelegate,
    StartToolCall,
)
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.interaction.snapshot import ProcessSnapshot
from scope_temporal.outputs import Failure, Output
from scope_temporal.payload_limits import size_of
from scope_temporal.payloads import (
    ContextPage,
    ContextPageRequest,
    ControlInput,
    InteractionInput,
    ResolveInput,
    SteerInput,
    ToolInputAnswer,
)
from scope_temporal.workflows import inputs, serving
from scope_temporal.workflows.calls import run_delegate, run_tool_call
from scope_temporal.workflows.model_calls import ModelCaller
from scope_temporal.workflows.outcomes import (
    failure_error,
    update_rejection,
)

_CARRY_RETRY_CALLS = 20


# ScopeError: a deterministic framework error (e.g. the Definition changed under a running
# Interaction) must fail the workflow with its code, never loop as a workflow-task failure.
# Not sandboxed, on purpose. Everything this workflow runs is passed through the sandbox
# anyway (our modules, and the registered Definitions with their validators, which must be
# the very objects the worker registered), and the sandbox does not restrict passed-through
# code: measured, a completion validator reading the wall clock, a random number and
# the current date ran unhindered inside it. All it added was CPU (about a quarter of the
# worker's busy time on bench workload W). Determinism is kept by construction: the loop
# is pure (tests/unit/test_core_hygiene.py) and these modules use workflow.* APIs only.
@workflow.defn(
    name=names.INTERACTION_WORKFLOW,
    failure_exception_types=[ScopeError],
    sandboxed=False,
)
class InteractionWorkflow:
    """One Interaction of any registered Definition (chosen by name from the input)."""

    @workflow.init
    def __init__(self, input: InteractionInput) -> None:
        # The machine exists before the first handler runs, so a steer or query that
        # arrives with the very first workflow task finds it.
        self._machine: InteractionMachine | None = None
        self._dirty = False
        self._tasks: list[asyncio.Task[None]] = []
        self._crash: BaseException | None = None
        self._startup_failure: Failure | None = None
        self._reported_status = "running"  # what the client set at start
        self._models = ModelCaller(input.context_sent)
        # child workflows started and not ended (signals addressed below them go to them)
        self._children: set[str] = set()
        self._carry_checked_until = 0  # see _can_carry
        task_queue = workflow.info().task_queue
        served = serving.current()
        definition = served.lookup(input.definition)
        if definition is None:
            self._startup_failure = Failure.of(
                errors.DEFINITION_UNKNOWN,
                f"No Definition {input.definition!r} is registered on task queue "
                f"{task_queue!r} (known: {served.names}). Register it on the worker.",
            )
            return
        try:
            if input.state is not None:
                self._machine = InteractionMachine(definition, input.state)
            else:
                self._machine = InteractionMachine.start(
                    definition,
                    workflow.info().workflow_id,
                    list(input.messages),
                    max_model_calls=input.max_model_calls,
                    capabilities=input.capabilities,
                )
        except ScopeError as error:
            self._startup_failure = Failure.of(error.code, error.message)

    @workflow.run
    async def run(self, input: InteractionInput) -> Output:
        machine = self._machine
        if machine is None:
            raise failure_error(
                self._startup_failure or Failure.of(errors.STATE_INVALID, "did not start")
            )
        definition = machine.definition
        # The digest is recorded in history as a local activity's result: a replay under a
        # changed declaration reads the old digest back and fails with its code, instead
        # of silently diverging (or looping on a non-determinism error).
        recorded = await workflow.execute_local_activity(
            names.RECORD_DIGEST_ACTIVITY,
            definition.digest,
            result_type=str,
            start_to_close_timeout=timedelta(seconds=10),
            summary=f"definition {definition.name} {definition.digest[:12]}",
        )
        if recorded != definition.digest:
            raise failure_error(
                Failure.of(
                    errors.DEFINITION_CHANGED,
                    f"Definition {definition.name!r} changed while this Interaction ran "
                    f"(recorded {recorded[:12]}, now {definition.digest[:12]}). Deploy changed "
                    "agents under a new Definition name, or let old runs finish first.",
                )
            )
        try:
            await self._drive(machine, input)
        except asyncio.CancelledError:
            machine.cancel()
            self._track(input)
            for task in self._tasks:
                task.cancel()
            await self._cancel_background_tasks(machine)
            raise
        if machine.output is not None:
            return machine.output
        raise failure_error(machine.failure or Failure.of(errors.STATE_INVALID, "no output"))

    async def _drive(self, machine: InteractionMachine, input: InteractionInput) -> None:
        calls_at_start = machine.model_calls_started
        while True:
            if machine.at_round_boundary and not self._tasks:
                every = input.continue_as_new_every
                due = every is not None and machine.model_calls_started - calls_at_start >= every
                if (due or workflow.info().is_continue_as_new_suggested()) and self._can_carry(
                    machine, input
                ):
                    await workflow.wait_condition(workflow.all_handlers_finished)
                    workflow.continue_as_new(self._carried(machine, input))
            for effect in machine.next_effects():
                if isinstance(effect, CallModel):
                    self._spawn(self._models.call(machine, effect))
                elif isinstance(effect, StartToolCall):
                    self._spawn(run_tool_call(machine, effect.request, self._children))
                elif isinstance(effect, StartDelegate):
                    self._spawn(run_delegate(machine, effect, input.track_status, self._children))
            self._track(input)
            if self._crash is not None:
                raise self._crash
            if machine.done:
                for task in self._tasks:
                    task.cancel()
                return
            await workflow.wait_condition(lambda: self._dirty)
            self._dirty = False

    async def _cancel_background_tasks(self, machine: InteractionMachine) -> None:
        """Cancel the background tasks this Interaction launched (they are abandoned
        children of their calls, so Temporal does not cancel them with it); a task that
        already ended refuses, which is fine."""

        async def cancel(task_id: str) -> None:
            try:
                await workflow.get_external_workflow_handle(task_id).cancel()
            except Exception as error:  # ended already: nothing to stop
                workflow.logger.info("background task %s not cancelled: %s", task_id, error)

        await asyncio.gather(*(cancel(t) for t in machine.tasks_to_cancel))

    def _carried(self, machine: InteractionMachine, input: InteractionInput) -> InteractionInput:
        """The next run's input: the whole state (context, counters, steer mailbox)."""
        return InteractionInput(
            definition=input.definition,
            track_status=input.track_status,
            continue_as_new_every=input.continue_as_new_every,
            state=machine.state,
            context_sent=self._models.context_sent,
        )

    def _can_carry(self, machine: InteractionMachine, input: InteractionInput) -> bool:
        """Whether the state fits in the next run's input (under the payload limit).

        If not (a huge conversation and no external storage), this run goes on instead:
        its history still grows by one round at a time, and the check is repeated only
        every `_CARRY_RETRY_CALLS` model calls, so it never costs a copy per round.
        """
        if machine.model_calls_started < self._carry_checked_until:
            return False
        size = size_of(self._carried(machine, input))
        limit = serving.current().payload_limit
        if size <= limit:
            return True
        self._carry_checked_until = machine.model_calls_started + _CARRY_RETRY_CALLS
        workflow.logger.warning(
            "not continuing as new: the state is %d bytes, over the payload limit of %d; "
            "configure storage= on the worker to offload it",
            size,
            limit,
        )
        return False

    def _spawn(self, work: Any) -> None:
        task: asyncio.Task[None] = asyncio.create_task(work)
        self._tasks.append(task)

        def finished(t: asyncio.Task[None]) -> None:
            self._tasks.remove(t)
            if not t.cancelled() and t.exception() is not None and self._crash is None:
                self._crash = t.exception()
            self._dirty = True

        task.add_done_callback(finished)

    def _track(self, input: InteractionInput) -> None:
        """Show the live status in the UI; keep the ScopeStatus search attribute current.

        The attribute changes only on pause/resume (signals) and at the end. An unknown
        effect shows as `waiting` in the details but not in the attribute: an update that
        settles it may be applied before or after the activity's failure in the same
        workflow task on replay, so no command may depend on that moment.
        """
        machine = self._machine
        if machine is None:
            return
        status = machine.status
        note = ""
        if status == "waiting":
            note = " · waiting: the model call's outcome is unknown; resolve it"
        elif machine.active_children:
            note = f" · running {len(machine.active_children)} call(s)"
        limit = machine.max_model_calls
        workflow.set_current_details(
            f"**{status}** · definition `{machine.definition.name}` · model calls "
            f"{machine.model_calls}/{limit if limit is not None else '∞'}{note}"
        )
        if status == "waiting":
            status = "running"
        if status == self._reported_status:
            return
        self._reported_status = status
        if input.track_status:
            workflow.upsert_search_attributes(
                [
                    names.DEFINITION_ATTRIBUTE.value_set(machine.definition.name),
                    names.STATUS_ATTRIBUTE.value_set(status),
                ]
            )

    # --- signals and updates ---------------------------------------------------------

    # Handlers take the raw payload: a malformed one is refused like any bad input
    # (recorded, or raised to the update's caller), never dropped (see `inputs`).

    @workflow.signal(name=names.STEER)
    def steer_signal(self, raw: RawValue) -> None:
        machine = self._require_machine()
        try:
            input = inputs.decode(raw, SteerInput, "steer")
            inputs.check_steer_room(machine, input)
            machine.steer(input.signal_id, input.messages)
        except ScopeError as error:
            machine.record_rejected(inputs.claimed_id(raw, "signal_id"), "steer", error)
        self._dirty = True

    @workflow.update(name=names.STEER)
    def steer_update(self, raw: RawValue) -> bool:
        try:
            input = inputs.decode(raw, SteerInput, "steer")
            accepted = self._require_machine().steer(input.signal_id, input.messages)
        except ScopeError as error:
            raise update_rejection(error) from None
        self._dirty = True
        return accepted

    @steer_update.validator
    def _validate_steer(self, raw: RawValue) -> None:
        try:
            machine = self._require_machine()
            input = inputs.decode(raw, SteerInput, "steer")
            inputs.check_steer_room(machine, input)
            machine.check_steer(input.signal_id, input.messages)
        except ScopeError as error:
            raise update_rejection(error) from None

    @workflow.signal(name=names.RESOLVE)
    def resolve_signal(self, raw: RawValue) -> None:
        machine = self._require_machine()
        try:
            input = inputs.decode(raw, ResolveInput, "resolve")
            inputs.check_size(input, "The settlement")
        except ScopeError as error:
            machine.record_rejected(inputs.claimed_id(raw, "signal_id"), "resolve", error)
            self._dirty = True
            return
        settlement = input.settlement
        target = settlement.request.process_id
        if target != machine.process_id:
            self._forward(target, names.RESOLVE, input)
            return
        try:
            if not isinstance(settlement, ModelSettlement):
                raise errors.SettlementMismatch("A tool settlement goes to its ToolCall process.")
            machine.resolve(settlement)
        except ScopeError as error:
            machine.record_rejected(input.signal_id, "resolve", error)
        self._dirty = True

    @workflow.update(name=names.RESOLVE)
    async def resolve_update(self, raw: RawValue) -> None:
        settlement = inputs.decode(raw, ResolveInput, "resolve").settlement
        assert isinstance(settlement, ModelSettlement)
        machine = self._require_machine()
        # On replay an update can be applied before the activity failure it settles,
        # when both fall in one workflow task: wait for the unknown to be recorded.
        await workflow.wait_condition(lambda: not machine.model_in_flight)
        try:
            machine.resolve(settlement)
        except ScopeError as error:
            raise update_rejection(error) from None
        self._dirty = True

    @resolve_update.validator
    def _validate_resolve(self, raw: RawValue) -> None:
        try:
            input = inputs.decode(raw, ResolveInput, "resolve")
            inputs.check_size(input, "The settlement")
            if not isinstance(input.settlement, ModelSettlement):
                raise errors.SettlementMismatch(
                    "A tool settlement must be sent to its ToolCall process (unknown.process_id)."
                )
            self._require_machine().check_resolution(input.settlement)
        except ScopeError as error:
            raise update_rejection(error) from None

    @workflow.signal(name=names.TOOL_INPUT)
    def tool_input_signal(self, raw: RawValue) -> None:
        try:
            input = inputs.decode(raw, ToolInputAnswer, "tool_input")
            inputs.check_size(input, "The answer")
        except ScopeError as error:
            claimed = inputs.claimed_id(raw, "answer_id")
            self._require_machine().record_rejected(claimed, "tool_input", error)
            self._dirty = True
            return
        target = input.process_id or input.wait_id.rsplit("/wait/", 1)[0]
        self._forward(target, names.TOOL_INPUT, input)

    @workflow.update(name=names.TOOL_INPUT)
    def tool_input_update(self, raw: RawValue) -> bool:
        raise update_rejection(self._answer_elsewhere(raw))

    @tool_input_update.validator
    def _validate_tool_input(self, raw: RawValue) -> None:
        raise update_rejection(self._answer_elsewhere(raw))

    def _answer_elsewhere(self, raw: RawValue) -> ScopeError:
        """An answer sent as an update must go to the ToolCall process holding the wait."""
        try:
            input = inputs.decode(raw, ToolInputAnswer, "tool_input")
        except ScopeError as error:
            return error
        target = input.process_id or input.wait_id.rsplit("/wait/", 1)[0]
        return errors.NoSuchWait(
            f"Interaction {self._require_machine().process_id!r} holds no input wait itself; "
            f"send the answer to the ToolCall process that waits ({target!r}), as "
            "InteractionHandle.answer does, or as a signal here (it is forwarded)."
        )

    @workflow.signal(name=names.PAUSE)
    def pause(self, raw: RawValue = inputs.NO_PAYLOAD) -> None:
        machine = self._require_machine()
        try:
            inputs.decode_optional(raw, ControlInput, "pause")
        except ScopeError as error:
            machine.record_rejected("", "pause", error)
            return
        machine.pause()
        for child in sorted(self._children):
            self._signal_child(child, names.PAUSE, ControlInput())
        self._dirty = True

    @workflow.signal(name=names.RESUME)
    def resume(self, raw: RawValue = inputs.NO_PAYLOAD) -> None:
        machine = self._require_machine()
        try:
            inputs.decode_optional(raw, ControlInput, "resume")
        except ScopeError as error:
            machine.record_rejected("", "resume", error)
            return
        machine.resume()
        for child in sorted(self._children):
            self._signal_child(child, names.RESUME, ControlInput())
        self._dirty = True

    @workflow.query(name=names.SNAPSHOT_QUERY)
    def snapshot(self) -> ProcessSnapshot:
        snap = self._require_machine().snapshot()
        # calls running as activities of this workflow are not child processes
        children = tuple(c for c in snap.active_children if c in self._children)
        return snap.model_copy(update={"active_children": children})

    @workflow.query(name=names.CONTEXT_QUERY)
    def context_page(self, input: ContextPageRequest) -> ContextPage:
        """Messages of the latest model call, for a worker whose cache missed them."""
        return self._models.page(input)

    def _require_machine(self) -> InteractionMachine:
        if self._machine is None:
            raise errors.ProtocolError("The Interaction has not started yet.")
        return self._machine

    def _forward(self, target: str, signal: str, payload: Any) -> None:
        """Pass a signal addressed to a descendant to the active child on its path (or to
        one of this Interaction's background tasks)."""
        machine = self._require_machine()
        for child in sorted(self._children) + list(machine.background_tasks):
            if target == child or target.startswith(child + "/"):
                self._signal_child(child, signal, payload)
                return
        signal_id = str(getattr(payload, "signal_id", None) or getattr(payload, "answer_id", ""))
        kind: Literal["resolve", "tool_input"] = (
            "resolve" if signal == names.RESOLVE else "tool_input"
        )
        machine.record_rejected(
            signal_id,
            kind,
            errors.NoSuchWait(f"No active child process {target!r} to deliver {signal} to."),
        )

    def _signal_child(self, child_id: str, signal: str, payload: Any) -> None:
        async def deliver() -> None:
            try:
                await workflow.get_external_workflow_handle(child_id).signal(signal, payload)
            except Exception as error:  # the child ended meanwhile: nothing to deliver to
                workflow.logger.info("signal %s to %s not delivered: %s", signal, child_id, error)

        self._spawn(deliver())

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

from pydantic import BaseModel
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ChildWorkflowError

from scope_temporal import errors, names
from scope_temporal.errors import ScopeError
from scope_temporal.interaction.effects import (
    CallModel,
    CallSettled,
    DelegateSettled,
    ModelHostFailed,
    ModelResponded,
    ModelSettlement,
    ModelUnknown,
    StartDelegate,
    StartToolCall,
)
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.interaction.snapshot import ProcessSnapshot
from scope_temporal.outputs import Failure, Output
from scope_temporal.payload_limits import size_of, too_large
from scope_temporal.payloads import (
    ControlInput,
    InteractionInput,
    ModelActivityInput,
    ResolveInput,
    SteerInput,
    ToolCallInput,
    ToolInputAnswer,
)
from scope_temporal.workflows import registry
from scope_temporal.workflows.outcomes import (
    child_failure,
    describe_activity_error,
    failure_error,
    update_rejection,
)
from scope_temporal.workflows.summaries import call_summary, model_summary

_ONCE = RetryPolicy(maximum_attempts=1)
_TOOL_MARGIN = timedelta(seconds=5)


# ScopeError: a deterministic framework error (e.g. the Definition changed under a running
# Interaction) must fail the workflow with its code, never loop as a workflow-task failure.
@workflow.defn(
    name=names.INTERACTION_WORKFLOW,
    failure_exception_types=[ScopeError],
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
        task_queue = workflow.info().task_queue
        definition = registry.lookup(task_queue, input.definition)
        if definition is None:
            self._startup_failure = Failure.of(
                errors.DEFINITION_UNKNOWN,
                f"No Definition {input.definition!r} is registered on task queue "
                f"{task_queue!r} (known: {registry.names(task_queue)}). Register it on the "
                "worker.",
            )
            return
        # Runs recorded before sequential calls became barriers replay by their old rules.
        barriers = workflow.patched(names.BARRIER_SCHEDULING_PATCH)
        try:
            if input.state is not None:
                self._machine = InteractionMachine(definition, input.state, barriers=barriers)
            else:
                self._machine = InteractionMachine.start(
                    definition,
                    workflow.info().workflow_id,
                    list(input.messages),
                    max_model_calls=input.max_model_calls,
                    capabilities=input.capabilities,
                    barriers=barriers,
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
            raise
        if machine.output is not None:
            return machine.output
        raise failure_error(machine.failure or Failure.of(errors.STATE_INVALID, "no output"))

    async def _drive(self, machine: InteractionMachine, input: InteractionInput) -> None:
        definition = machine.definition
        calls_at_start = machine.model_calls_started
        while True:
            if machine.at_round_boundary and not self._tasks:
                every = input.continue_as_new_every
                due = every is not None and machine.model_calls_started - calls_at_start >= every
                if due or workflow.info().is_continue_as_new_suggested():
                    await self._continue_as_new(machine, input)
            for effect in machine.next_effects():
                if isinstance(effect, CallModel):
                    self._spawn(
                        self._call_model(
                            machine,
                            effect,
                            definition.model_timeout,
                            definition.model_heartbeat_timeout,
                        )
                    )
                elif isinstance(effect, StartToolCall):
                    self._spawn(self._run_tool_call(machine, effect))
                elif isinstance(effect, StartDelegate):
                    self._spawn(self._run_delegate(machine, effect, input.track_status))
            self._track(input)
            if self._crash is not None:
                raise self._crash
            if machine.done:
                for task in self._tasks:
                    task.cancel()
                return
            await workflow.wait_condition(lambda: self._dirty)
            self._dirty = False

    def _refuse_oversized(
        self, machine: InteractionMachine, payload: BaseModel, what: str, advice: str
    ) -> bool:
        """Fail the Interaction instead of scheduling a command Temporal would reject."""
        limit = registry.payload_limit(workflow.info().task_queue)
        size = size_of(payload)
        if size <= limit:
            return False
        machine.fail(errors.PAYLOAD_TOO_LARGE, too_large(what, size, limit, advice))
        return True

    async def _continue_as_new(self, machine: InteractionMachine, input: InteractionInput) -> None:
        """Carry the whole state (context, counters, steer mailbox) into a fresh run."""
        await workflow.wait_condition(workflow.all_handlers_finished)
        workflow.continue_as_new(
            InteractionInput(
                definition=input.definition,
                track_status=input.track_status,
                continue_as_new_every=input.continue_as_new_every,
                state=machine.state,
            )
        )

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
        snap = machine.snapshot()
        note = ""
        if snap.unknown_effects:
            note = " · waiting: the model call's outcome is unknown; resolve it"
        elif snap.active_children:
            note = f" · running {len(snap.active_children)} child call(s)"
        limit = machine.state.max_model_calls
        workflow.set_current_details(
            f"**{snap.status}** · definition `{snap.definition}` · model calls "
            f"{snap.model_calls}/{limit if limit is not None else '∞'}{note}"
        )
        status = "running" if snap.status == "waiting" else snap.status
        if status == self._reported_status:
            return
        self._reported_status = status
        if input.track_status:
            workflow.upsert_search_attributes(
                [
                    names.DEFINITION_ATTRIBUTE.value_set(snap.definition),
                    names.STATUS_ATTRIBUTE.value_set(status),
                ]
            )

    async def _call_model(
        self,
        machine: InteractionMachine,
        effect: CallModel,
        timeout: timedelta,
        heartbeat: timedelta | None,
    ) -> None:
        request = effect.request
        payload = ModelActivityInput(request=request, heartbeat=heartbeat)
        if self._refuse_oversized(
            machine,
            payload,
            f"The request to model {request.model!r} (#{request.model_call_seq})",
            "Add a context_reducer to the Definition, or raise payload_limit_bytes.",
        ):
            return
        try:
            result = await workflow.execute_activity(
                names.MODEL_ACTIVITY,
                payload,
                result_type=ModelResponded | ModelHostFailed | ModelUnknown,  # type: ignore[arg-type]
                start_to_close_timeout=timeout,
                heartbeat_timeout=heartbeat,
                retry_policy=_ONCE,
                summary=model_summary(request.model_call_seq, request.model),
            )
        except ActivityError as error:
            if workflow.cancellation_reason() is not None:
                return  # the Interaction is being cancelled; run() ends it as canceled
            result = ModelUnknown(
                effect_id=request.effect_id, diagnostic=describe_activity_error(error)
            )
        if not machine.done:
            machine.on_model(result)

    async def _run_tool_call(self, machine: InteractionMachine, effect: StartToolCall) -> None:
        request = effect.request
        definition = machine.definition
        timeout = request.tool.timeout or definition.tool_timeout
        payload = ToolCallInput(
            request=request,
            start_to_close=timeout + _TOOL_MARGIN,
            heartbeat=definition.tool_heartbeat_timeout,
        )
        if self._refuse_oversized(
            machine,
            payload,
            f"The input of tool call {request.call.name!r} ({request.ref})",
            "The model produced oversized arguments; nothing ran.",
        ):
            return
        try:
            handle = await workflow.start_child_workflow(
                names.TOOL_CALL_WORKFLOW,
                payload,
                id=request.process_id,
                result_type=CallSettled,
                parent_close_policy=workflow.ParentClosePolicy.REQUEST_CANCEL,
                static_summary=call_summary("tool", request.call),
            )
        except Exception as error:  # the child could not start: a host failure
            machine.fail(
                errors.TOOL_CHILD_REJECTED,
                f"ToolCall child {request.process_id!r} could not start: {error}",
            )
            return
        try:
            settled = await handle
        except ChildWorkflowError as error:
            failure = child_failure(error, errors.HOST_FAILED)
            machine.fail(
                failure.code,
                f"ToolCall child {request.process_id!r} ended without a "
                f"settlement: {failure.message}",
            )
            return
        if not machine.done:
            machine.on_call(settled)

    async def _run_delegate(
        self, machine: InteractionMachine, effect: StartDelegate, track_status: bool
    ) -> None:
        if registry.lookup(workflow.info().task_queue, effect.definition) is None:
            machine.on_call(
                DelegateSettled(
                    effect_id=effect.effect_id,
                    failure=Failure.of(
                        errors.DELEGATE_REJECTED,
                        f"Definition {effect.definition!r} is not registered on this "
                        "task queue; the delegate was not started.",
                    ),
                )
            )
            return
        try:
            handle = await workflow.start_child_workflow(
                names.INTERACTION_WORKFLOW,
                InteractionInput(
                    definition=effect.definition,
                    messages=effect.messages,
                    max_model_calls=effect.max_model_calls,
                    capabilities=effect.capabilities,
                    track_status=track_status,
                ),
                id=effect.process_id,
                result_type=Output,
                parent_close_policy=workflow.ParentClosePolicy.REQUEST_CANCEL,
                static_summary=f"delegate {effect.delegate} -> {effect.definition}",
            )
        except Exception as error:  # a refused start is model-visible, not a failure
            settled = DelegateSettled(
                effect_id=effect.effect_id,
                failure=Failure.of(errors.DELEGATE_REJECTED, f"the child could not start: {error}"),
            )
        else:
            try:
                settled = DelegateSettled(effect_id=effect.effect_id, output=await handle)
            except ChildWorkflowError as error:
                settled = DelegateSettled(
                    effect_id=effect.effect_id, failure=child_failure(error, errors.DELEGATE_FAILED)
                )
        if not machine.done:
            machine.on_call(settled)

    # --- signals and updates ---------------------------------------------------------

    @workflow.signal(name=names.STEER)
    def steer_signal(self, input: SteerInput) -> None:
        machine = self._require_machine()
        try:
            machine.steer(input.signal_id, input.messages)
        except ScopeError as error:
            machine.record_rejected(input.signal_id, "steer", error)
        self._dirty = True

    @workflow.update(name=names.STEER)
    def steer_update(self, input: SteerInput) -> bool:
        try:
            accepted = self._require_machine().steer(input.signal_id, input.messages)
        except ScopeError as error:
            raise update_rejection(error) from None
        self._dirty = True
        return accepted

    @steer_update.validator
    def _validate_steer(self, input: SteerInput) -> None:
        try:
            self._require_machine().check_steer(input.signal_id, input.messages)
        except ScopeError as error:
            raise update_rejection(error) from None

    @workflow.signal(name=names.RESOLVE)
    def resolve_signal(self, input: ResolveInput) -> None:
        machine = self._require_machine()
        settlement = input.settlement
        target = settlement.request.process_id
        if target != machine.state.process_id:
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
    async def resolve_update(self, input: ResolveInput) -> None:
        settlement = input.settlement
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
    def _validate_resolve(self, input: ResolveInput) -> None:
        try:
            if not isinstance(input.settlement, ModelSettlement):
                raise errors.SettlementMismatch(
                    "A tool settlement must be sent to its ToolCall process (unknown.process_id)."
                )
            self._require_machine().check_resolution(input.settlement)
        except ScopeError as error:
            raise update_rejection(error) from None

    @workflow.signal(name=names.TOOL_INPUT)
    def tool_input_signal(self, input: ToolInputAnswer) -> None:
        target = input.process_id or input.wait_id.rsplit("/wait/", 1)[0]
        self._forward(target, names.TOOL_INPUT, input)

    @workflow.signal(name=names.PAUSE)
    def pause(self, input: ControlInput | None = None) -> None:
        machine = self._require_machine()
        machine.pause()
        for child in machine.snapshot().active_children:
            self._signal_child(child, names.PAUSE, ControlInput())
        self._dirty = True

    @workflow.signal(name=names.RESUME)
    def resume(self, input: ControlInput | None = None) -> None:
        machine = self._require_machine()
        machine.resume()
        for child in machine.snapshot().active_children:
            self._signal_child(child, names.RESUME, ControlInput())
        self._dirty = True

    @workflow.query(name=names.SNAPSHOT_QUERY)
    def snapshot(self) -> ProcessSnapshot:
        return self._require_machine().snapshot()

    def _require_machine(self) -> InteractionMachine:
        if self._machine is None:
            raise errors.ProtocolError("The Interaction has not started yet.")
        return self._machine

    def _forward(self, target: str, signal: str, payload: Any) -> None:
        """Pass a signal addressed to a descendant to the active child on its path."""
        machine = self._require_machine()
        for child in machine.snapshot().active_children:
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

"""The one driver of a Tool call Process, on any engine.

It runs the attempts the machine asks for, one at a time (never retried), feeds each
outcome back, and maps the host's inputs onto the machine: an answer to its input wait,
a settlement of its unknown outcome, pause and resume. A steer is never for a tool call.
Its result is exactly one definite settlement, or the failure that ended it. It reports
its input wait and its unknown outcome to the tree's event stream (before it settles:
they precede the call's settlement there). While the call waits for approval, its live
status (the Temporal UI's current details) holds the exact `scope.tool_input` signal
input that approves or denies it.
"""

from __future__ import annotations

import asyncio
import contextlib

from scope_temporal import errors
from scope_temporal.driver import sampling
from scope_temporal.driver.attention import Teller
from scope_temporal.driver.calls import attempt_tool
from scope_temporal.driver.inputs import check_size, settlement_for
from scope_temporal.driver.transport import ToolCallTransport
from scope_temporal.errors import ScopeError
from scope_temporal.interaction import approvals
from scope_temporal.interaction.attention import Attention, scope_status
from scope_temporal.interaction.effects import CallSettled, ToolSettlement
from scope_temporal.interaction.news import ToolCallNews
from scope_temporal.interaction.sampling_values import Sampled
from scope_temporal.interaction.snapshot import ProcessSnapshot, SignalKind
from scope_temporal.interaction.tool_call import ToolCallMachine
from scope_temporal.outputs import Failure
from scope_temporal.payloads import ResolveInput, ToolCallInput, ToolInputAnswer


class ToolCallDriver:
    """Drives one Tool call Process.

    Args:
        input: the call (and, when an Interaction promotes a call it attempted itself, the
            outcome of that first attempt).
        transport: the engine.
        limit: the serving worker's payload limit, for calls whose Interaction did not
            pass its own down (histories from before it did).
    """

    def __init__(self, input: ToolCallInput, transport: ToolCallTransport, *, limit: int) -> None:
        self.machine = machine = ToolCallMachine.start(
            input.request, input.approval, input.decision
        )
        if input.first_outcome is not None:
            # promoted by an Interaction that already ran the first attempt itself
            machine.next_attempt()
            machine.on_outcome(input.first_outcome)
            transport.record_outcome(input.request, input.first_outcome)
        if input.paused:
            machine.pause()
        self._input = input
        self._transport = transport
        self._limit = input.payload_limit if input.payload_limit is not None else limit
        self._news = ToolCallNews()
        self._teller = Teller(input.route.report_to)
        self._untold = False  # a change the Interaction has not been told about yet
        self._sampled = Sampled()  # what its MCP server's sampling requests used
        self._samples = 0  # sampling requests answered (each a wait of its own)

    async def run(self) -> CallSettled | Failure:
        """Run attempts until the call is settled: its settlement, or the failure of a
        machine that failed closed.

        Raises:
            asyncio.CancelledError: the call was cancelled (its parent was); it ends
                canceled and nobody collects its outcome.
        """
        machine, transport, input = self.machine, self._transport, self._input

        def ended() -> bool:
            return machine.outcome is not None or machine.failure is not None

        self._tell()  # promoted with its first outcome, or waiting for approval
        telling = asyncio.ensure_future(self._telling())
        try:
            while not ended():
                attempt = machine.next_attempt()
                self._show()
                if attempt is None and self._sampling():
                    await self._sample()
                    continue
                if attempt is None:
                    await transport.wait_until(
                        lambda: (
                            ended()
                            or (machine.phase == "ready" and not machine.paused)
                            or self._sampling()
                        )
                    )
                    continue
                outcome = await attempt_tool(
                    transport,
                    attempt,
                    start_to_close=input.start_to_close,
                    heartbeat=input.heartbeat,
                    route=input.route,
                    task_queue=input.task_queue,
                    titled=True,
                    session=input.mcp_session,
                )
                with contextlib.suppress(ScopeError):  # a crash: the machine has failed closed
                    machine.on_outcome(outcome)
                    transport.record_outcome(input.request, outcome)
                self._changed()
        except asyncio.CancelledError:
            if not transport.evicted():  # an evicted copy has nothing to clean up
                machine.cancel()
            raise
        finally:
            telling.cancel()
        self._show()
        await transport.flush_events()
        if machine.outcome is None:
            return machine.failure or Failure.of(errors.STATE_INVALID, "no settlement")
        return CallSettled(
            effect_id=input.request.effect_id,
            outcome=machine.outcome,
            approval=machine.approval,
            sampled=self._sampled if self._samples else None,
        )

    def _sampling(self) -> bool:
        """Its MCP server's sampling request waits for the model (not while paused)."""
        return self.machine.sampling_wait is not None and not self.machine.paused

    async def _sample(self) -> None:
        """Answer the sampling request with one model call (`driver.sampling`)."""
        wait = self.machine.sampling_wait
        assert wait is not None
        self._samples += 1
        number = self._samples
        response, self._sampled = await sampling.answer(
            self._transport,
            self._input.request,
            wait.prompt,
            self._input.sampling,
            self._sampled,
            number,
        )
        with contextlib.suppress(ScopeError):  # cancelled meanwhile: the wait is gone
            self.machine.answer(wait.wait_id, f"sample-{number}", response, by_model=True)
        self._changed()

    def _need(self) -> Attention | None:
        phase = self.machine.phase
        if phase == "waiting" and self.machine.sampling_wait is None:
            return "waiting_input"
        return "unknown" if phase == "unknown" else None

    def _tell(self) -> None:
        """Tell the Interaction what this call needs from a person, if that changed (an
        ended call tells nothing: its result reaches the Interaction)."""
        machine = self.machine
        if machine.outcome is None and machine.failure is None:
            pid = self._input.request.process_id
            self._teller.tell(self._transport, pid, self._need(), pid)

    async def _telling(self) -> None:
        """Tell after each change, once the workflow task's inputs are all applied (see
        driver.attention): never from a handler, whose order against an update's
        acceptance a replay may not keep."""
        while True:
            await self._transport.wait_until(lambda: self._untold)
            self._untold = False
            self._tell()

    def _changed(self) -> None:
        self._untold = True
        self._transport.changed()

    def _show(self) -> None:
        """Show the live status; report what is new."""
        snap = self.machine.snapshot()
        self._transport.publish(self._news.step(snap))
        detail = f"**{snap.status}** · entries {snap.tool_entries}"
        for wait in snap.pending_tool_inputs:
            if wait.kind == "approval":
                detail += (
                    f" · waiting for approval `{wait.wait_id}`: {wait.prompt_text}\n\n"
                    f"Approve: send signal `scope.tool_input` with input\n\n"
                    f"    {approvals.signal_json(wait.wait_id, 'approve')}\n\n"
                    f"Deny: send signal `scope.tool_input` with input\n\n"
                    f"    {approvals.signal_json(wait.wait_id, 'deny')}"
                )
            else:
                detail += f" · waiting for input `{wait.wait_id}`: {wait.prompt_text}"
        if self.machine.sampling_wait is not None:
            detail += f" · its MCP server asks the model (sampling #{self._samples + 1})"
        if snap.unknown_effects:
            detail += f" · outcome unknown: {snap.unknown_effects[0].diagnostic}"
        self._transport.show(detail)

    # --- the host's inputs -----------------------------------------------------------

    def reject(self, signal_id: str, signal: SignalKind, error: ScopeError) -> None:
        """Record an input refused before it could be read (e.g. malformed)."""
        self.machine.record_rejected(signal_id, signal, error)
        self._changed()

    def tool_input_signal(self, input: ToolInputAnswer) -> None:
        try:
            self.validate_answer(input)
            self.machine.answer(input.wait_id, input.answer_id, input.response)
        except ScopeError as error:
            self.machine.record_rejected(input.answer_id, "tool_input", error)
        self._changed()

    def validate_answer(self, input: ToolInputAnswer) -> None:
        check_size(input, "The answer", self._limit)
        self.machine.check_answer(input.wait_id, input.answer_id, input.response)

    async def answer_update(self, input: ToolInputAnswer) -> bool:
        machine = self.machine
        # On replay an update can be applied before the activity outcome that opened the
        # wait, when both fall in one workflow task: wait for the wait to be recorded.
        await self._transport.wait_until(lambda: machine.phase != "running")
        accepted = machine.answer(input.wait_id, input.answer_id, input.response)
        self._changed()
        return accepted

    def resolve_signal(self, input: ResolveInput) -> None:
        try:
            settlement = settlement_for(input, ToolSettlement, self._limit)
            self.machine.resolve(settlement)
            self._transport.record_settlement(settlement)
        except ScopeError as error:
            self.machine.record_rejected(input.signal_id, "resolve", error)
        self._changed()

    def validate_resolve(self, input: ResolveInput) -> None:
        self.machine.check_resolution(settlement_for(input, ToolSettlement, self._limit))

    async def resolve_update(self, input: ResolveInput) -> None:
        settlement = settlement_for(input, ToolSettlement, self._limit)
        machine = self.machine
        # See answer_update: wait until the unknown outcome is recorded.
        await self._transport.wait_until(lambda: machine.phase != "running")
        machine.resolve(settlement)
        self._transport.record_settlement(settlement)
        self._changed()

    def steer_refusal(self) -> ScopeError:
        parent = self._input.request.parent_id
        return errors.InvalidSignal(
            f"A tool call takes no steer; steer its Interaction {parent!r} (it never answers "
            "an input wait: answer with scope.tool_input)."
        )

    def pause(self) -> None:
        self.machine.pause()
        self._changed()

    def resume(self) -> None:
        self.machine.resume()
        self._changed()

    def snapshot(self) -> ProcessSnapshot:
        snap = self.machine.snapshot()
        people = scope_status(snap.status, snap.status == "paused", self._need())
        return snap.model_copy(update={"scope_status": people})


__all__ = ["ToolCallDriver"]

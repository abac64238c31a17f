"""The host's inputs `scope.Interaction` and `scope.ToolCall` take alike. Everything here
runs inside the workflow: deterministic.

Both workflows are thin shells around a driver; the handlers below read each signal's and
update's raw payload and hand it to that driver, with the same names, the same decoding
and the same refusals. Handlers take the raw payload: a malformed one is refused like any
bad input (recorded, or raised to the update's caller), never dropped (see `inputs`).
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from pydantic import BaseModel
from temporalio import workflow
from temporalio.common import RawValue

from scope_temporal import names
from scope_temporal.errors import ScopeError
from scope_temporal.interaction.snapshot import ProcessSnapshot, SignalKind
from scope_temporal.payloads import ControlInput, ResolveInput, ToolInputAnswer
from scope_temporal.workflows import inputs
from scope_temporal.workflows.outcomes import refused_as_update
from scope_temporal.workflows.task_commands import CommandsInTask, refuse_update_after_commands

T = TypeVar("T", bound=BaseModel)


class ProcessDriver(Protocol):
    """What the shared handlers ask of a process's driver."""

    def reject(self, signal_id: str, signal: SignalKind, error: ScopeError) -> None: ...
    def tool_input_signal(self, input: ToolInputAnswer) -> None: ...
    def resolve_signal(self, input: ResolveInput) -> None: ...
    def validate_resolve(self, input: ResolveInput) -> None: ...
    async def resolve_update(self, input: ResolveInput) -> None: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...
    def snapshot(self) -> ProcessSnapshot: ...


class ProcessWorkflow(CommandsInTask):
    """The handlers both process workflows share; a subclass names its driver."""

    def _process(self) -> ProcessDriver:
        """The driver the inputs go to."""
        raise NotImplementedError

    def _signal(self, raw: RawValue, model: type[T], what: SignalKind, id_key: str) -> T | None:
        """A signal's payload, or None when it is malformed (recorded as rejected, under
        the id it claims in `id_key`)."""
        try:
            return inputs.decode(raw, model, what)
        except ScopeError as error:
            self._process().reject(inputs.claimed_id(raw, id_key), what, error)
            return None

    def _control(self, raw: RawValue, what: SignalKind) -> bool:
        """Whether a pause or resume payload (none, or a ControlInput) may be applied."""
        try:
            inputs.decode_optional(raw, ControlInput, what)
        except ScopeError as error:
            self._process().reject("", what, error)
            return False
        return True

    @workflow.signal(name=names.TOOL_INPUT)
    def tool_input_signal(self, raw: RawValue) -> None:
        input = self._signal(raw, ToolInputAnswer, "tool_input", "answer_id")
        if input is not None:
            self._process().tool_input_signal(input)

    @workflow.signal(name=names.RESOLVE)
    def resolve_signal(self, raw: RawValue) -> None:
        input = self._signal(raw, ResolveInput, "resolve", "signal_id")
        if input is not None:
            self._process().resolve_signal(input)

    @workflow.update(name=names.RESOLVE)
    async def resolve_update(self, raw: RawValue) -> None:
        input = inputs.decode(raw, ResolveInput, "resolve")
        with refused_as_update():
            await self._process().resolve_update(input)

    @resolve_update.validator
    def _validate_resolve(self, raw: RawValue) -> None:
        refuse_update_after_commands()
        with refused_as_update():
            self._process().validate_resolve(inputs.decode(raw, ResolveInput, "resolve"))

    @workflow.signal(name=names.PAUSE)
    def pause(self, raw: RawValue = inputs.NO_PAYLOAD) -> None:
        if self._control(raw, "pause"):
            self._process().pause()

    @workflow.signal(name=names.RESUME)
    def resume(self, raw: RawValue = inputs.NO_PAYLOAD) -> None:
        if self._control(raw, "resume"):
            self._process().resume()

    @workflow.query(name=names.SNAPSHOT_QUERY)
    def snapshot(self) -> ProcessSnapshot:
        return self._process().snapshot()


__all__ = ["ProcessDriver", "ProcessWorkflow"]

"""The one pydantic model each workflow, activity, signal, update and query takes.

Fields can be added compatibly; every payload is JSON (pydantic data converter).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from scope_temporal.chat import Message
from scope_temporal.interaction.effects import ModelEffectRequest, Settlement, ToolEffectRequest
from scope_temporal.interaction.state import InteractionState
from scope_temporal.interaction.tool_call import ToolAttempt


class _Payload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class InteractionInput(_Payload):
    """Start (or continue-as-new) one `scope.Interaction`."""

    definition: str
    """Name of a Definition registered on the worker serving the task queue."""
    messages: tuple[Message, ...] = ()
    """The initial messages (ignored when `state` is given)."""
    max_model_calls: int | None = None
    """A tighter budget (a parent's Delegate setting)."""
    capabilities: tuple[str, ...] | None = None
    """A narrower grant (a parent's Delegate setting)."""
    track_status: bool = False
    """Upsert the ScopeStatus search attribute (only when the server has it registered)."""
    continue_as_new_every: int | None = None
    """Continue-as-new after this many model calls in one run (besides whenever Temporal
    suggests it); for very long loops and for tests."""
    state: InteractionState | None = None
    """Carried by continue-as-new."""


class ToolCallInput(_Payload):
    """Start one `scope.ToolCall` child."""

    request: ToolEffectRequest
    start_to_close: timedelta
    heartbeat: timedelta | None = None


class ModelActivityInput(_Payload):
    request: ModelEffectRequest
    heartbeat: timedelta | None = None


class ToolActivityInput(_Payload):
    attempt: ToolAttempt
    heartbeat: timedelta | None = None


class SteerInput(_Payload):
    """Signal/update `scope.steer`: user messages for the next model call."""

    signal_id: str
    messages: tuple[Message, ...]


class ToolInputAnswer(_Payload):
    """Signal/update `scope.tool_input`: the host's answer to a tool input wait."""

    wait_id: str
    answer_id: str
    response: Any = None
    process_id: str | None = None
    """The ToolCall process; lets the root forward a signal sent to it."""


class ResolveInput(_Payload):
    """Signal/update `scope.resolve`: the host's settlement of an unknown Effect."""

    signal_id: str
    settlement: Annotated[Settlement, Field(discriminator="kind")]


class ControlInput(_Payload):
    """Signals `scope.pause` / `scope.resume` (no fields yet)."""

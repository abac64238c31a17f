"""The Interaction's whole state as one JSON-serialisable value.

It is what continue-as-new carries and what a snapshot projects; restoring it from JSON
gives a machine that behaves identically. Only `machine.py` changes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from scope_temporal.chat import Message, ToolCall, ToolResult
from scope_temporal.errors import STATE_INVALID, ProtocolError, ScopeError
from scope_temporal.interaction.effects import ModelEffectRequest
from scope_temporal.interaction.snapshot import RejectedSignal, RoundResults
from scope_temporal.outputs import Artifact, Failure, Output
from scope_temporal.tools.outcome import Disposition
from scope_temporal.tools.spec import SchedulingClass

Phase = Literal["need_model", "model", "round", "completed", "failed", "canceled"]
"""need_model: the next step is a model call; model: one is in flight or unknown;
round: a batch of calls is executing; the rest are terminal."""

TERMINAL_PHASES: frozenset[str] = frozenset({"completed", "failed", "canceled"})


class _State(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False)


class PendingModel(_State):
    """The model Effect in flight (or held unknown)."""

    request: ModelEffectRequest
    emitted: bool = False
    unknown: bool = False
    diagnostic: str = ""


class CallSlot(_State):
    """One call of the open round."""

    index: int
    call: ToolCall
    effect_id: str
    target: Literal["tool", "delegate", "none"]
    """`none`: settled at admission (not available / not authorized / invalid arguments)."""
    scheduling: SchedulingClass = "sequential"
    concurrency_key: str | None = None
    direct_result: bool = False
    status: Literal["pending", "running", "settled"] = "pending"
    result: ToolResult | None = None
    disposition: Disposition | None = None
    for_user: Any = None
    output_ref: str | None = None
    metadata: dict[str, Any] | None = None
    advertised: tuple[str, ...] = ()
    artifact: Artifact | None = None
    task_id: str | None = None
    """The background task the call launched."""
    process_id: str | None = None
    """Child process id, for calls that start a child."""


class OpenRound(_State):
    model_call_seq: int
    slots: list[CallSlot]


class SteerEnvelope(_State):
    signal_id: str
    messages: tuple[Message, ...]


class InteractionState(_State):
    """Everything the Interaction knows. Serialises to JSON and restores exactly."""

    process_id: str
    definition: str
    digest: str
    phase: Phase = "need_model"
    paused: bool = False
    context: list[Message]
    model_calls: int = 0
    """Model responses consumed (including host-settled ones)."""
    next_model_call_seq: int = 1
    max_model_calls: int | None
    granted: tuple[str, ...]
    advertised: list[str] = []
    model: PendingModel | None = None
    round: OpenRound | None = None
    rounds: list[RoundResults] = []
    mailbox: list[SteerEnvelope] = []
    signal_digests: dict[str, str] = {}
    """Every accepted steer id -> digest of its content (for dedup and conflicts)."""
    applied_signals: list[str] = []
    rejected_signals: list[RejectedSignal] = []
    artifacts: list[Artifact] = []
    output: Output | None = None
    failure: Failure | None = None


M = TypeVar("M", bound=BaseModel)
R = TypeVar("R")


def transact(state: M, change: Callable[[M], R], crash: Callable[[Exception], None]) -> tuple[M, R]:
    """Run `change` on a draft of `state`: the new state and its result, or nothing changed.

    A refused input (`ScopeError`) propagates and `state` is untouched; any other exception
    is a bug in the core: `crash(exc)` ends the machine closed (it may change `state`) and
    a `ProtocolError` (`interaction.state.invalid`) propagates.
    """
    draft = draft_of(state)
    try:
        result = change(draft)
    except ScopeError:
        raise
    except Exception as exc:
        crash(exc)
        raise ProtocolError(str(exc), code=STATE_INVALID) from exc
    return draft, result


def draft_of(state: M) -> M:
    """A copy of `state` that a transition may change freely without touching `state`.

    Frozen values (messages, results, requests) are immutable, so they are shared, not
    copied; only the containers and the unfrozen models around them are new. A transition
    therefore costs time in the number of entries, not in the bytes of the conversation.
    """
    return _copy_model(state)


def _copy_model(model: M) -> M:
    if model.model_config.get("frozen"):
        return model
    values = {name: _copy_value(getattr(model, name)) for name in type(model).model_fields}
    return model.model_construct(_fields_set=model.model_fields_set, **values)


def _copy_value(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return _copy_model(value)
    if isinstance(value, list):
        # the state's lists are typed, so homogeneous: one look at the first entry tells
        # whether the entries are immutable (shared) or need copying one by one
        if not value or _immutable(value[0]):
            return list(value)
        return [_copy_value(item) for item in value]
    if isinstance(value, dict):
        return {key: _copy_value(item) for key, item in value.items()}
    return value  # str, int, bool, None, tuples of frozen values


def _immutable(value: Any) -> bool:
    if isinstance(value, BaseModel):
        return bool(value.model_config.get("frozen"))
    return isinstance(value, str | int | float | bool | None)

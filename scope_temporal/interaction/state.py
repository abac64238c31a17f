"""The Interaction's whole state as one JSON-serialisable value.

It is what continue-as-new carries and what a snapshot projects; restoring it from JSON
gives a machine that behaves identically. Only `machine.py` changes it (the round's
bookkeeping in `rounds.py` runs inside the machine's transitions).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from scope_temporal.approval import ApprovalRecord
from scope_temporal.chat import Message, Options, ToolCall, ToolResult
from scope_temporal.context_refs import BaseRef
from scope_temporal.interaction.carried_context import (
    context_from_wire,
    context_to_wire,
    rounds_from_wire,
    rounds_to_wire,
)
from scope_temporal.interaction.effects import ModelEffectRequest
from scope_temporal.interaction.snapshot import (
    ModelAttempt,
    RejectedSignal,
    RoundResults,
    UnknownEffect,
)
from scope_temporal.outputs import Artifact, Failure, Output, TokenUsage
from scope_temporal.tools.outcome import Disposition
from scope_temporal.tools.spec import SchedulingClass
from scope_temporal.wire import Shared

Phase = Literal["need_model", "model", "backoff", "round", "completed", "failed", "canceled"]
"""need_model: the next step is a model call; model: one is in flight or unknown;
backoff: the model call did not run and its next attempt waits on a timer; round: a
batch of calls is executing; the rest are terminal."""

LIVE_PHASES: tuple[Phase, ...] = ("need_model", "model", "backoff", "round")
TERMINAL_PHASES: tuple[Phase, ...] = ("completed", "failed", "canceled")


class _State(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False)


class RetryTimer(_State):
    """The wait before the next attempt of a model call (phase `backoff`)."""

    delay: timedelta
    reason: str
    started: bool = False


class PendingModel(_State):
    """The model Effect in flight (or held unknown, or waiting to be retried)."""

    request: ModelEffectRequest
    emitted: bool = False
    unknown: bool = False
    diagnostic: str = ""
    retries: int = 0
    """Attempts of this model call after the first, on every model (the Effect id's `n`)."""
    model_index: int = 0
    """Which of the Definition's models the request goes to: 0 `model`, then fallbacks."""
    model_attempts: int = 1
    """Attempts on that model that it refused for now (the first included)."""
    resends: int = 0
    """Automatic re-sends of an unknown outcome (`ModelRetry.ambiguous`)."""
    timer: RetryTimer | None = None


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
    approval: ApprovalRecord | Literal["ask"] | None = None
    """How the call's approval was decided, if it needed one; `ask`: admitted needing an
    approval that nothing gave yet (see `approvals.py`)."""

    @model_validator(mode="before")
    @classmethod
    def _one_approval_field(cls, data: Any) -> Any:
        """A slot recorded with the old pair (`ask_approval=True`, `approval=None`)
        decodes to `approval="ask"`."""
        if isinstance(data, dict) and "ask_approval" in data:
            data = dict(data)
            if data.pop("ask_approval") and data.get("approval") is None:
                data["approval"] = "ask"
        return data


class OpenRound(_State):
    model_call_seq: int
    slots: list[CallSlot]


class SteerEnvelope(_State):
    signal_id: str
    messages: tuple[Message, ...]


class SubmittedTask(_State):
    """A background task the host submitted to this Interaction (`submits`)."""

    task_id: str
    tool: str
    arguments: str
    """Canonical JSON (sorted keys): a resubmission with equal arguments is the same task."""


class InteractionState(_State, Shared):
    """Everything the Interaction knows. Serialises to JSON and restores exactly.

    On the wire (`scope_temporal.wire`, rule 7) a settled round's call and result that
    the context holds too are written as where the context holds them, `[message index,
    part index]`: each is carried once, not twice (a 1 KB result used to add 2 KB to
    every continue-as-new of a long Interaction); and the context is written as segments
    that a process encodes and decodes once (`carried_context`). Reading accepts every
    earlier form.
    """

    WIRE_OWN = frozenset({"context", "rounds"})

    process_id: str
    definition: str
    digest: str
    phase: Phase = "need_model"
    paused: bool = False
    context: list[Message] = []
    """The working context (after a turn's base). On the wire, `shared_context`."""
    model_calls: int = 0
    """Model responses consumed (including host-settled ones)."""
    next_model_call_seq: int = 1
    max_model_calls: int | None
    options: Options | None = None
    """This Interaction's sampling options (given at start, over the Definition's own);
    None: the Definition's."""
    granted: tuple[str, ...]
    approved_tools: list[str] = []
    """Tools approved for the session: passed in pre-approved, or approved with
    `remember` in this Interaction (their later calls need no approval)."""
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
    run_context: dict[str, Any] = {}
    """What the Interaction acts for (`scope_temporal.run_context`); never model-visible."""
    base: BaseRef | None = None
    """A session's turn: the transcript its context starts with, by reference; `context`
    holds what follows. Dropped when a reducer (or the host) replaces the context."""
    turn_of: str | None = None
    """A session's turn: the session's workflow id (its Output carries the transcript)."""
    instructions: str | None = None
    """A session's turn: the Definition's instructions, sent before the base (never in
    `context`, so never in the session's transcript). Dropped with the base."""
    usage: TokenUsage = TokenUsage()
    """Tokens of the model calls, and of the delegates that ended."""
    model_attempts: list[ModelAttempt] = []
    """The latest attempts that gave no response (not called, or superseded)."""
    incarnation: int = 1
    """This run of the Interaction: 1, one more per continue-as-new (`Attribution`)."""
    unsettled_at_cancel: list[UnknownEffect] = []
    """The calls running when the Interaction was cancelled, with their requests
    (`cancellation.py`); listed as unknown by its snapshot."""
    submitted: list[SubmittedTask] = []
    """Background tasks the host submitted, in submission order."""
    sampled_calls: int = 0
    """Model calls MCP servers' sampling requests made (in `model_calls` too; counted
    against `max_model_calls`, `sampling.py`)."""
    sampling_reserved: dict[str, int] = {}
    """Running calls' sampling allowances (EffectID -> model calls reserved)."""

    shared_rounds: list[str] | None = Field(default=None, exclude=True)
    """Only on the wire, read into `rounds`: the JSON texts of segments of the settled
    rounds in the compact form, an entry's call or result that the context holds given
    as `[message, part]`, and a round's `process_id` and an entry's `call_ref` left out
    when they are this state's and the one its position names (`carried_context`)."""

    shared_context: list[str] | None = Field(default=None, exclude=True)
    """Only on the wire, read into `context`: the JSON texts of its segments
    (`carried_context`), each encoded and decoded once per process."""

    @model_serializer(mode="wrap")
    def _later(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Leave out the sampling counts while they are empty (added after the bytes of
        these dumps were pinned: a state without sampling dumps as it did before)."""
        dumped = handler(self)
        if isinstance(dumped, dict):
            for name in ("sampled_calls", "sampling_reserved"):
                if name in dumped and not dumped[name]:
                    del dumped[name]
        return dumped

    def wire_share(self, dumped: dict[str, Any]) -> None:
        dumped.pop("context", None)
        dumped.pop("rounds", None)
        if self.context:
            dumped["shared_context"] = context_to_wire(self.context)
        if self.rounds:
            dumped["shared_rounds"] = rounds_to_wire(self.process_id, self.context, self.rounds)

    @model_validator(mode="after")
    def _from_wire(self) -> InteractionState:
        """Read `shared_context` into `context`, then `shared_rounds` into `rounds`,
        taking each call or result given by place from the context (the very objects:
        shared in memory too). An after-validator, so the rest is parsed as usual (a
        validator before it would parse the whole state in Python, 2 to 3 times slower
        for a long conversation)."""
        if self.shared_context is not None:
            if self.context:
                raise ValueError("a state gives its context twice (context, shared_context)")
            self.context = context_from_wire(self.shared_context)
            self.shared_context = None
        if self.shared_rounds is not None:
            if self.rounds:
                raise ValueError("a state gives its rounds twice (rounds, shared_rounds)")
            self.rounds = rounds_from_wire(self.shared_rounds, self.process_id, self.context)
            self.shared_rounds = None
        return self

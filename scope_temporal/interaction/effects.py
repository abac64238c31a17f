"""Effects the core asks for, and the settlements that answer them.

Every external operation is an Effect with a stable EffectID and exactly one settlement.
Requests are *retained*: an unknown Effect keeps its request so the host can investigate
and settle it from exactly what was asked (`settle_model_result`, `settle_tool_result`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from scope_temporal import ids
from scope_temporal.approval import ApprovalRecord
from scope_temporal.chat import Message, Options, Response, ToolCall
from scope_temporal.context_refs import BaseRef
from scope_temporal.interaction.approvals import ApprovalGate
from scope_temporal.interaction.sampling_values import Sampled, SamplingAllowance
from scope_temporal.mcp.values import McpToolRecord
from scope_temporal.models.not_called import NotCalled
from scope_temporal.models.protocol import ToolDefinition
from scope_temporal.outputs import Failure, Output
from scope_temporal.tools.budget import ToolBudget
from scope_temporal.tools.outcome import Failed, Rejected, Succeeded
from scope_temporal.wire import ContextRule, Derivation, Derived, Path


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# --- retained requests -------------------------------------------------------------


class ModelEffectRequest(_Frozen):
    """Exactly what one model call asked for."""

    kind: Literal["model"] = "model"
    definition: str
    digest: str
    process_id: str
    effect_id: str
    model_call_seq: int
    model: str
    """Name of the model registered on the worker."""
    messages: tuple[Message, ...]
    """The working context (after steers were applied), before any context reducer; for a
    session's turn, the part after `base`."""
    tools: tuple[ToolDefinition, ...]
    options: Options
    context_reducer: str | None = None
    applied_signals: tuple[str, ...] = ()
    base: BaseRef | None = None
    """A session's turn: the session transcript the context starts with, by reference (the
    model was sent the base's messages, then `messages`)."""

    instructions: str | None = None
    """A session's turn: the Definition's instructions, sent first (a system message),
    before the base and `messages`; None: `messages` hold them, if any."""

    def expanded(self, base: tuple[Message, ...]) -> ModelEffectRequest:
        """The request as the model is sent it: the instructions, then the base's messages
        (`base` holds exactly them), then its own."""
        if self.base is None and self.instructions is None:
            return self
        first = (Message.system(self.instructions),) if self.instructions else ()
        messages = (*first, *base, *self.messages)
        return self.model_copy(update={"messages": messages, "base": None, "instructions": None})

    attempt: int = 1
    """Which Effect of this model call (`Attribution.attempt`): 1, one more per retry."""
    incarnation: int = 1
    """The Interaction's run that asked (`Attribution.incarnation`)."""


class McpSampleInput(_Frozen):
    """`scope.mcp.sample`: one model call for an MCP server's sampling request, whole (a
    few messages, no tools: nothing to refer to by reference)."""

    request: ModelEffectRequest


def _position(d: Mapping[str, Any]) -> tuple[str, int, int]:
    return d["parent_id"], d["model_call_seq"], d["call_index"]


EVERY_PERMISSION = ["exec", "read", "write"]
"""What a payload that leaves `granted` out grants (never changes: such payloads mean it)."""


def call_position(prefix: Path, workflow_id: str) -> dict[Path, Any]:
    """The fields of a tool call request at `prefix` that a ToolCall child's workflow id
    derives (its caller and the call's position; wire rule 5)."""
    position = ids.tool_call_position(workflow_id)
    if position is None:
        return {}
    parent_id, seq, index = position
    return {
        (*prefix, "parent_id"): parent_id,
        (*prefix, "model_call_seq"): seq,
        (*prefix, "call_index"): index,
    }


class ToolEffectRequest(_Frozen, Derived):
    """Exactly what one tool call asked for.

    On the wire (`scope_temporal.wire`) `process_id`, `effect_id` and `ref` are left out
    when they are what the call's position derives (its ToolCall child's id, the call's
    EffectID and ToolCallRef), `granted` when it is every permission, and the digest is
    written in base64url; a payload without them gets them back when read.
    """

    WIRE_DERIVED: ClassVar[dict[str, Derivation]] = {
        "process_id": lambda d: ids.tool_call_process_id(*_position(d)),
        "effect_id": lambda d: ids.call_effect_id(*_position(d)),
        "ref": lambda d: ids.tool_call_ref(*_position(d)),
        "granted": lambda d: EVERY_PERMISSION,
    }
    WIRE_DIGESTS: ClassVar[frozenset[str]] = frozenset({"digest"})

    kind: Literal["tool"] = "tool"
    definition: str
    """The Definition of the Interaction that made the call."""
    digest: str
    process_id: str
    """Id of the ToolCall process that owns the Effect."""
    parent_id: str
    effect_id: str
    """Stable for the logical call: the idempotency key for external systems."""
    ref: str
    model_call_seq: int
    call_index: int
    call: ToolCall
    granted: tuple[str, ...]
    """Permissions the calling Process holds."""
    deferred_tools: tuple[str, ...] = ()
    """Deferred tools of the Definition that this call may advertise."""
    context: dict[str, Any] = {}
    """The calling Interaction's run context (`ToolInvocation.context`)."""
    budget: ToolBudget | None = None
    """What this call may use, allocated by its Interaction's Definition (`tool_budget`)."""
    incarnation: int = 1
    """The Interaction's run that made the call (`Attribution.incarnation`)."""
    mcp: McpToolRecord | None = None
    """The recorded MCP tool the call reaches (None: a local tool); see docs/mcp.md."""


_ATTRIBUTION = {"attempt": 1, "incarnation": 1}


def same_request(
    given: ModelEffectRequest | ToolEffectRequest, retained: ModelEffectRequest | ToolEffectRequest
) -> bool:
    """Whether a host's settlement was built from the retained request.

    The attribution fields (`attempt`, `incarnation`) are the framework's bookkeeping, not
    what was asked, and are left out: the effect id already names the attempt, and a
    settlement recorded before they existed still matches its request on replay.
    """
    return given.model_copy(update=_ATTRIBUTION) == retained.model_copy(update=_ATTRIBUTION)


# --- effects -----------------------------------------------------------------------


class CallModel(_Frozen):
    """Call the model once (activity `scope.model`, never retried)."""

    kind: Literal["call_model"] = "call_model"
    request: ModelEffectRequest


class StartToolCall(_Frozen):
    """Start the ToolCall child process for one ordinary tool call."""

    kind: Literal["start_tool_call"] = "start_tool_call"
    request: ToolEffectRequest
    approval: ApprovalGate | None = None
    """Set when the call waits for approval before its first attempt."""
    decision: ApprovalRecord | None = None
    """The approval its Interaction gave at admission (the approver, or an approval
    remembered for the tool): every attempt carries it to `scope.tool`'s guard."""
    sampling: SamplingAllowance | None = None
    """Its server may sample: what its requests may use of the budget (`sampling`)."""


class StartDelegate(_Frozen):
    """Start a Delegate child: an Interaction of another Definition."""

    kind: Literal["start_delegate"] = "start_delegate"
    effect_id: str
    process_id: str
    ref: str
    model_call_seq: int
    call_index: int
    delegate: str
    definition: str
    messages: tuple[Message, ...]
    max_model_calls: int | None
    capabilities: tuple[str, ...]
    run_context: dict[str, Any] = {}
    """The parent's run context, which the delegate inherits."""


class WaitRetry(_Frozen):
    """Wait on a durable timer, then make the next attempt of the model call in flight
    (the previous one provably did not run, or was unknown and `ambiguous=` allows a
    re-send). The driver reports the timer with `retry_due(effect_id)`."""

    kind: Literal["wait_retry"] = "wait_retry"
    effect_id: str
    """The attempt that follows the wait (`<id>/model/<seq>/retry/<n>`)."""
    model_call_seq: int
    retry: int
    """Which retry of the model call follows (1, 2, ...)."""
    delay: timedelta
    reason: str
    """Why, for people: `429`, `no connection`, `unknown outcome`..."""


Effect = Annotated[
    CallModel | StartToolCall | StartDelegate | WaitRetry, Field(discriminator="kind")
]


# --- settlements from the driver ---------------------------------------------------


class ModelResponded(_Frozen):
    """A structurally valid model response (the loop still judges it against its rules)."""

    kind: Literal["responded"] = "responded"
    effect_id: str
    response: Response
    messages_sent: tuple[Message, ...] | None = None
    """The messages actually sent, when a context reducer replaced them."""


class ModelHostFailed(_Frozen):
    """A definite failure before any external work (e.g. the context reducer raised)."""

    kind: Literal["host_failed"] = "host_failed"
    effect_id: str
    message: str


class ModelUnknown(_Frozen):
    """The outcome of the model call cannot be proven; the Effect is held for the host."""

    kind: Literal["unknown"] = "unknown"
    effect_id: str
    diagnostic: str


class ModelNotRun(_Frozen):
    """The model provably did not run the request (the adapter raised `ModelRejected`,
    `ModelContextOverflow` or `ModelUnavailable` with sound fields): definite, never
    unknown. The loop retries a retryable one (`Definition.model_retry`) as a new Effect,
    or fails with its code."""

    kind: Literal["not_called"] = "not_called"
    effect_id: str
    reason: NotCalled


ModelOutcome = Annotated[
    ModelResponded | ModelHostFailed | ModelUnknown | ModelNotRun, Field(discriminator="kind")
]


class CallSettled(_Frozen, Derived):
    """The definite result of a ToolCall child.

    On the wire (`scope_temporal.wire`) `effect_id` is left out when the child's workflow
    id derives it (it always does: the call's EffectID follows from its position), and
    so is the tag: the parent reads a child's result as exactly this model.
    """

    WIRE_EXACT: ClassVar[bool] = True

    WIRE_CONTEXT: ClassVar[ContextRule | None] = lambda workflow_id: _settled_effect(workflow_id)

    kind: Literal["call_settled"] = "call_settled"
    effect_id: str
    outcome: Annotated[Succeeded | Failed | Rejected, Field(discriminator="kind")]
    approval: ApprovalRecord | None = None
    """How the call's approval wait was answered, if it had one."""
    sampled: Sampled | None = None
    """What its MCP server's sampling requests used (model calls, tokens)."""


class DelegateSettled(_Frozen):
    """The end of a Delegate child: its Output, or why it failed or was refused."""

    kind: Literal["delegate_settled"] = "delegate_settled"
    effect_id: str
    output: Output | None = None
    failure: Failure | None = None


CallOutcome = Annotated[CallSettled | DelegateSettled, Field(discriminator="kind")]


def _settled_effect(workflow_id: str) -> dict[Path, Any]:
    position = ids.tool_call_position(workflow_id)
    return {} if position is None else {("effect_id",): ids.call_effect_id(*position)}


# --- host settlements of unknown effects ---------------------------------------------


class ModelSettlement(_Frozen):
    """A host's investigated settlement of an unknown model Effect."""

    kind: Literal["model"] = "model"
    request: ModelEffectRequest
    response: Response
    """The response the host established."""
    messages_sent: tuple[Message, ...]


class ModelResend(_Frozen):
    """A host's choice for an unknown model Effect: send its retained request again, as a
    new Effect. The unknown one is recorded as superseded (the snapshot's
    `model_attempts`); whatever it did is never admitted. Never for a tool call."""

    kind: Literal["model_resend"] = "model_resend"
    request: ModelEffectRequest


class ToolSettlement(_Frozen):
    """A host's investigated settlement of an unknown tool Effect."""

    kind: Literal["tool"] = "tool"
    request: ToolEffectRequest
    outcome: Annotated[Succeeded | Failed | Rejected, Field(discriminator="kind")]


Settlement = Annotated[ModelSettlement | ModelResend | ToolSettlement, Field(discriminator="kind")]

"""Read-only projections of a Process and of the whole tree (what hosts and the UI see)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from scope_temporal.approval import ApprovalRecord
from scope_temporal.chat import Message, ToolCall, ToolResult
from scope_temporal.interaction.attention import (
    Attention,
    ScopeStatus,
    attention_of,
    most,
    scope_status,
)
from scope_temporal.interaction.effects import ModelEffectRequest, ToolEffectRequest
from scope_temporal.outputs import Artifact, Failure, Output, TokenUsage
from scope_temporal.tools.outcome import Disposition, ProgressSummary

Status = Literal["running", "waiting", "paused", "completed", "failed", "canceled"]
_ENDED = ("completed", "failed", "canceled")
ProcessKind = Literal["interaction", "tool_call", "background_task"]
TaskStatus = Literal["running", "waiting_input", "completed", "failed", "canceled"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ResultEntry(_Frozen):
    """One settled call of a round."""

    call_index: int
    call: ToolCall
    result: ToolResult
    """What the model saw."""
    disposition: Disposition
    for_user: Any = None
    """Host/user-only output of the tool (never in the model context)."""
    ref: str | None = None
    """The reference a ToolOutput carried."""
    metadata: dict[str, Any] | None = None
    call_ref: str
    """ToolCallRef of the call."""
    task_id: str | None = None
    """The background task the call launched (its result is a `launch_result`)."""
    approval: ApprovalRecord | None = None
    """How the call's approval was decided, when its Definition's policy covered it."""


class RoundResults(_Frozen):
    """The committed results of one model response's batch, in call order."""

    process_id: str
    model_call_seq: int
    entries: tuple[ResultEntry, ...]


class PendingToolInput(_Frozen):
    """A tool waiting for an answer from the host."""

    process_id: str
    wait_id: str
    prompt: Any
    """What the tool asks: a string, or any JSON value the tool passed."""
    response_schema: dict[str, Any]
    ref: str
    kind: Literal["input", "approval"] = "input"
    """`approval`: the call waits for approval before it runs; the prompt holds the
    question, the tool, its permission and arguments; answer with `{"decision":
    "approve" | "deny", "reason": str, "remember": bool}`."""

    @property
    def prompt_text(self) -> str:
        """The prompt for a person: a string as is, an approval's question, any other
        value as compact JSON."""
        if isinstance(self.prompt, str):
            return self.prompt
        if self.kind == "approval" and isinstance(self.prompt, dict):
            return str(self.prompt.get("question", ""))
        return json.dumps(self.prompt, ensure_ascii=False, separators=(",", ":"))


class UnknownEffect(_Frozen):
    """An Effect whose outcome cannot be proven; only the host can settle it."""

    process_id: str
    effect_id: str
    kind: Literal["model", "tool"]
    request: ModelEffectRequest | ToolEffectRequest
    ref: str | None
    diagnostic: str


class ModelAttempt(_Frozen):
    """An attempt of a model call that gave the loop no response, kept so that none is
    dropped silently: refused before it ran (`not_called`; then retried, or the
    Interaction failed), or unknown and sent again (`superseded`, by the host's
    `retry_model_call` or by `ModelRetry(ambiguous=...)`)."""

    effect_id: str
    model_call_seq: int
    model: str
    """The model (as the Definition binds it) the attempt was sent to."""
    outcome: Literal["not_called", "superseded"]
    message: str
    """The provider's message (not called), or why the outcome was unknown (superseded)."""
    code: str | None = None
    """Why it was not called: `interaction.model.unavailable`, `.rejected`, `.context_overflow`."""
    status: int | None = None
    """The HTTP status of the refusal (None: no HTTP answer, or superseded)."""
    retry_after: timedelta | None = None
    """The wait the provider asked for."""
    resent_by: Literal["host", "policy"] | None = None
    """Superseded: who chose to send the request again."""
    followed_by: str | None = None
    """The Effect id of the attempt that came next (None: none did; the Interaction failed)."""


class ActiveDelegate(_Frozen):
    """A Delegate child that has not ended yet."""

    process_id: str
    ref: str
    name: str


SignalKind = Literal["steer", "tool_input", "resolve", "pause", "resume"]
"""The host's inputs a Process may refuse."""


class RejectedSignal(_Frozen):
    """A signal the Process refused; it changed nothing."""

    signal_id: str
    """The id it carried (clipped to 256 characters; "" when none could be read)."""
    signal: SignalKind
    code: str
    message: str


class TaskSnapshot(_Frozen):
    """A background task (workflow `scope.BackgroundTask`) as hosts see it."""

    task_id: str
    """The task's workflow id: `<interaction id>/task/<model call seq>/<call index>`."""
    tool: str
    ref: str
    """ToolCallRef of the call that launched it."""
    parent_id: str
    """The Interaction that launched it."""
    status: TaskStatus
    attempt: int = 0
    """The latest attempt: 0 in the foreground, 1, 2, ... in the background."""
    progress: ProgressSummary = ProgressSummary()
    question: PendingToolInput | None = None
    """The open question while `waiting_input` (answer it like any tool input wait)."""
    data: Any = None
    """The result, once `completed`."""
    error: str | None = None
    """Why it failed or was cancelled."""
    code: str | None = None
    """The failure code (e.g. `tool.background.lost`)."""
    cancel_requested: bool = False
    description: str | None = None
    """How the task is shown to people (the tool's `description(arguments)`), if given."""

    @property
    def ended(self) -> bool:
        return self.status in ("completed", "failed", "canceled")


class ProcessSnapshot(_Frozen):
    """One Process's view of itself."""

    process_id: str
    kind: ProcessKind
    definition: str
    status: Status
    model_calls: int = 0
    context: tuple[Message, ...] = ()
    settled_results: tuple[RoundResults, ...] = ()
    pending_tool_inputs: tuple[PendingToolInput, ...] = ()
    unknown_effects: tuple[UnknownEffect, ...] = ()
    active_delegates: tuple[ActiveDelegate, ...] = ()
    active_children: tuple[str, ...] = ()
    """Ids of the child processes (tool calls and delegates) that have not ended."""
    artifacts: tuple[Artifact, ...] = ()
    applied_signals: tuple[str, ...] = ()
    pending_signals: tuple[str, ...] = ()
    rejected_signals: tuple[RejectedSignal, ...] = ()
    advertised_tools: tuple[str, ...] = ()
    approved_tools: tuple[str, ...] = ()
    """For an Interaction: the tools approved for the session (see `ApprovalPolicy`)."""
    output: Output | None = None
    failure: Failure | None = None
    tool_entries: int = 0
    """For a tool call: how many times the tool body was entered."""
    background_tasks: tuple[str, ...] = ()
    """For an Interaction: the background tasks its calls launched, in launch order."""
    task: TaskSnapshot | None = None
    """For a background task: its state."""
    scope_status: ScopeStatus | None = None
    """Its status for people (`interaction.attention`): for an Interaction, of its whole
    tree as its children reported it (what its `ScopeStatus` search attribute holds);
    None from workers that predate it."""
    usage: TokenUsage = TokenUsage()
    """For an Interaction: the tokens of its model calls and of its delegates that ended."""
    model_attempts: tuple[ModelAttempt, ...] = ()
    """For an Interaction: its model call attempts that gave no response (the latest 100)."""


class TreeSnapshot(_Frozen):
    """The whole tree below a root Interaction, assembled from every Process's snapshot.

    `status` is the root's, except that a running tree with any pending input or unknown
    effect anywhere below reports `waiting`; `scope_status` says which (`waiting_input`
    or `unknown`), as the root's `ScopeStatus` search attribute does.
    """

    root: ProcessSnapshot
    processes: tuple[ProcessSnapshot, ...]
    """Every Process reached, the root first."""

    @property
    def status(self) -> Status:
        if self.root.status == "running" and (self.pending_tool_inputs or self.unknown_effects):
            return "waiting"
        return self.root.status

    @property
    def scope_status(self) -> ScopeStatus:
        """The tree's status for people: `running`, `waiting_input`, `unknown`, `paused`,
        or how the root ended. Read from every Process reached, and from what the root's
        children reported to it (a Process a snapshot could not reach still counts)."""
        root = self.root
        need: Attention | None = (
            "unknown"
            if self.unknown_effects
            else "waiting_input"
            if self.pending_tool_inputs
            else None
        )
        need = most([need, attention_of(root.scope_status or "running")])
        return scope_status(root.status, root.status == "paused", need)

    @property
    def model_calls(self) -> int:
        return self.root.model_calls

    @property
    def context(self) -> tuple[Message, ...]:
        return self.root.context

    @property
    def output(self) -> Output | None:
        return self.root.output

    @property
    def failure(self) -> Failure | None:
        return self.root.failure

    @property
    def artifacts(self) -> tuple[Artifact, ...]:
        return self.root.artifacts

    @property
    def settled_results(self) -> list[RoundResults]:
        return [r for p in self.processes for r in p.settled_results]

    @property
    def pending_tool_inputs(self) -> list[PendingToolInput]:
        return [w for p in self.processes for w in p.pending_tool_inputs]

    @property
    def unknown_effects(self) -> list[UnknownEffect]:
        return [u for p in self.processes for u in p.unknown_effects]

    @property
    def active_delegates(self) -> list[ActiveDelegate]:
        return [d for p in self.processes for d in p.active_delegates]

    @property
    def rejected_signals(self) -> list[RejectedSignal]:
        return [r for p in self.processes for r in p.rejected_signals]

    @property
    def tasks(self) -> list[TaskSnapshot]:
        """Every background task launched in the tree, with its progress."""
        return [p.task for p in self.processes if p.task is not None]

    @property
    def applied_signals(self) -> list[str]:
        return [s for p in self.processes for s in p.applied_signals]

    @property
    def model_attempts(self) -> list[ModelAttempt]:
        """Every model call attempt of the tree that gave no response (retried, failed
        on, or superseded), by process."""
        return [a for p in self.processes for a in p.model_attempts]

    @property
    def usage(self) -> TokenUsage:
        """Tokens used by every model call of the tree so far, per model: the root's
        (which holds its delegates that ended) plus every delegate still running."""
        total = self.root.usage
        for process in self.processes[1:]:
            if process.kind == "interaction" and process.status not in _ENDED:
                total = total.plus(process.usage)
        return total

    def process(self, process_id: str) -> ProcessSnapshot:
        for p in self.processes:
            if p.process_id == process_id:
                return p
        raise KeyError(process_id)

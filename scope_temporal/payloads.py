"""The one pydantic model each workflow, activity, signal, update and query takes.

Fields can be added compatibly; every payload is JSON (pydantic data converter).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import timedelta
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field
from temporalio.contrib.workflow_streams import WorkflowStreamState

from scope_temporal.approval import ApprovalRecord
from scope_temporal.chat import Message, Options
from scope_temporal.context_refs import BaseRef, ContextRef
from scope_temporal.ids import model_effect_id
from scope_temporal.interaction.approvals import ApprovalGate
from scope_temporal.interaction.attention import AttentionReport, ScopeStatus
from scope_temporal.interaction.effects import (
    ModelEffectRequest,
    Settlement,
    ToolEffectRequest,
    call_position,
)
from scope_temporal.interaction.sampling_values import SamplingAllowance
from scope_temporal.interaction.session_values import SessionState
from scope_temporal.interaction.state import InteractionState
from scope_temporal.interaction.task_values import AttemptPlan, TaskState, YieldMode
from scope_temporal.interaction.tool_call import ToolAttempt
from scope_temporal.mcp.session_values import McpSessionRoute
from scope_temporal.mcp.values import McpListing
from scope_temporal.models.protocol import ToolDefinition
from scope_temporal.tools.outcome import InputRequired, ProgressSummary, TaskLaunch, Unknown
from scope_temporal.wire import ContextRule, Derivation, Derived, Flat, Grouped, Path


class _Payload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Route(_Payload, Grouped):
    """Where a process's news goes: the `route` of `InteractionInput`, `ToolCallInput`
    and `TaskInput`. On the wire its fields are written flat among the input's, as every
    history holds them (`scope_temporal.wire`, rule 9)."""

    events_to: str | None = None
    """The workflow hosting the tree's event stream (None: the process reports nothing;
    an Interaction hosts its own)."""
    report_to: str | None = None
    """The Interaction to tell what the process needs from a person (None: nobody)."""
    session_id: str | None = None
    """The session whose turn the process belongs to: a background task started under it
    sends its lifecycle notifications there (None: to the Interaction that launched it)."""


class RunSettings(_Payload):
    """What an Interaction's decisions depend on beyond its Definition, recorded in its
    history when it starts (the result of `scope.record_digest`) and carried by
    continue-as-new: a replay reads them back and never the replaying worker's
    configuration."""

    digest: str
    """The Definition's digest when the Interaction started."""
    payload_limit: int
    """The largest payload the Interaction creates or accepts (the worker's limit)."""
    delegates: tuple[str, ...] = ()
    """The delegate Definitions the worker served, of those the Definition delegates to."""
    attention: bool = False
    """The run shows who needs a person (`interaction.attention`): its children report to
    it, and its `ScopeStatus` says `waiting_input` / `unknown` for the whole tree. False
    in histories recorded before: those runs replay as they ran (lifecycle only)."""
    mcp_tools: tuple[McpListing, ...] | None = None
    """The tool lists of the Definition's MCP servers, fetched when the run started
    (`scope.mcp.list`); None: not fetched (the Definition declares no MCP server)."""


class InteractionCarry(_Payload, Grouped):
    """What one run of an Interaction carries to the next (continue-as-new) besides its
    state, built by `InteractionDriver._carried` and read back by the next run's driver.
    On the wire its fields are written flat, as they were when loose (`wire` rule 9)."""

    context_sent: int = 0
    """How many leading messages of the context the previous model call sent (the next
    call refers to them instead of sending them again)."""
    context_digest: str | None = None
    """The chain digest of the state's first `context_sent` messages (`context_refs`).
    The next run's first model call refers to them instead of sending them again; None
    (a run from before this field, or a context replaced since that call): it sends them."""
    settings: RunSettings | None = None
    """The settings the first run recorded (None: the run records them)."""
    stream: WorkflowStreamState | None = None
    """A host's latest events and the stream's offsets (Temporal's workflow_streams
    state); None: not a host, or nothing published yet."""
    reports: tuple[AttentionReport, ...] = ()
    """What the background tasks last reported."""
    told: AttentionReport | None = None
    """The last report sent to `route.report_to`."""
    scope_status: ScopeStatus | None = None
    """The ScopeStatus last recorded."""
    mcp_sessions: tuple[McpSessionRoute, ...] = ()
    """This Interaction's own MCP sessions (servers declared `session="interaction"`)
    and the worker queues holding them (docs/mcp.md, Stateful servers)."""


class InteractionInput(_Payload, Flat):
    """Start (or continue-as-new) one `scope.Interaction`."""

    # the order the fields had when they were loose: the bytes stay what they were
    WIRE_FLAT: ClassVar[tuple[str, ...]] = (
        *("definition", "messages", "max_model_calls", "capabilities", "context", "base"),
        *("options", "approved_tools", "track_status", "continue_as_new_every", "state"),
        *("context_sent", "context_digest", "settings", "events_to", "stream", "report_to"),
        *("reports", "told", "scope_status", "session_id", "notices", "instructions_first"),
        "mcp_sessions",
    )
    WIRE_LATER: ClassVar[frozenset[str]] = frozenset({"mcp_sessions"})

    definition: str
    """Name of a Definition registered on the worker serving the task queue."""
    messages: tuple[Message, ...] = ()
    """The initial messages (ignored when `state` is given)."""
    max_model_calls: int | None = None
    """A tighter budget (a parent's Delegate setting)."""
    capabilities: tuple[str, ...] | None = None
    """A narrower grant (a parent's Delegate setting)."""
    context: dict[str, Any] | None = None
    """The run context (a JSON object of identities and ids; `scope_temporal.run_context`):
    tools read it, delegates and background tasks inherit it, the model never sees it."""
    base: BaseRef | None = None
    """A session's turn: the session transcript its context starts with, by reference
    (`messages` follow it; the turn's history never holds the transcript)."""
    options: Options | None = None
    """Sampling options for this Interaction's model calls, over the Definition's own."""
    approved_tools: tuple[str, ...] = ()
    """Tools approved for the session already (e.g. a session's earlier turn's
    `Output.approved_tools`): their calls need no approval unless the approver denies."""
    track_status: bool = False
    """Upsert the ScopeStatus search attribute (only when the server has it registered)."""
    continue_as_new_every: Annotated[int, Field(ge=1)] | None = None
    """Continue-as-new after this many model calls in one run (besides whenever Temporal
    suggests it); for very long loops and for tests. At least 1: below, a run would
    continue as new before its first model call, forever (no history holds such a run
    that ever made progress)."""
    state: InteractionState | None = None
    """Carried by continue-as-new: the state the run continues from."""
    carry: InteractionCarry = InteractionCarry()
    """Carried by continue-as-new: what else the previous run carried over."""
    route: Route = Route()
    """Where this Interaction's news goes: `events_to`, the tree's event stream (a
    delegate's root, a session's turn's session; None: this Interaction hosts it);
    `report_to`, whom it tells what it needs from a person (a Delegate's parent);
    `session_id`, a session's turn's session, which its background tasks notify (the
    session passes it to the running turn, or keeps it for the next one)."""
    notices: tuple[SteerInput, ...] = ()
    """A session's turn: task notifications the session kept for it, applied as steers
    before its first model call (ignored when `state` is given)."""
    instructions_first: bool | None = None
    """A session's turn: True, every model call sends the instructions before the base;
    False, the base holds them; None (not a turn, or an older session's): `initial_state`."""


def _caller(d: Mapping[str, Any]) -> Any:
    request = d["request"]
    return request.parent_id if isinstance(request, ToolEffectRequest) else request["parent_id"]


DEFAULT_TOOL_START_TO_CLOSE = "PT10M5S"
"""What a ToolCall input that leaves `start_to_close` out means: a Definition's default
`tool_timeout` with the call's margin (never changes: such payloads mean it)."""
USUAL_HEARTBEAT = "PT10S"
"""What a marked payload (wire rule 6) leaving `heartbeat` out means: a Definition's
default heartbeat timeouts (never changes: such payloads mean it)."""
USUAL_PAYLOAD_LIMIT = 1_000_000
"""What a marked ToolCall input leaving `payload_limit` out means: the default limit
(never changes: such payloads mean it)."""


class ToolCallInput(_Payload, Flat):
    """Start one `scope.ToolCall` child.

    On the wire (`scope_temporal.wire`), the caller and the call's position are left out
    of `request` (the child's workflow id names them), and `start_to_close` when it is
    `DEFAULT_TOOL_START_TO_CLOSE`. A marked payload leaves out the route's `events_to`
    and `report_to` naming the calling Interaction (`request.parent_id`), the usual
    heartbeat and payload limit; an unmarked one (every one written before) writes them
    `true` when they name the caller.
    """

    WIRE_MARKED: ClassVar[dict[str, Derivation]] = {"events_to": _caller, "report_to": _caller}
    WIRE_DERIVED: ClassVar[dict[str, Derivation]] = {
        "start_to_close": lambda d: DEFAULT_TOOL_START_TO_CLOSE
    }
    WIRE_DEFAULTS: ClassVar[dict[str, Derivation]] = {
        "heartbeat": lambda d: USUAL_HEARTBEAT,
        "payload_limit": lambda d: USUAL_PAYLOAD_LIMIT,
        "events_to": _caller,
        "report_to": _caller,
    }
    WIRE_CONTEXT: ClassVar[ContextRule | None] = functools.partial(call_position, ("request",))
    WIRE_FLAT: ClassVar[tuple[str, ...]] = (
        *("request", "start_to_close", "heartbeat", "first_outcome", "paused", "approval"),
        *("decision", "payload_limit", "events_to", "report_to", "task_queue", "session_id"),
        "mcp_session",
        "sampling",
    )
    WIRE_LATER: ClassVar[frozenset[str]] = frozenset({"mcp_session", "sampling"})

    request: ToolEffectRequest
    start_to_close: timedelta
    heartbeat: timedelta | None = None
    first_outcome: Annotated[InputRequired | Unknown, Field(discriminator="kind")] | None = None
    """Set when the Interaction already ran the first attempt as its own activity
    (`tool_call_workflows="on_demand"`) and promotes the call: the child takes over from
    this outcome (an input wait, or an unknown outcome) without entering the tool again."""
    paused: bool = False
    """The Interaction was paused when it promoted the call."""
    approval: ApprovalGate | None = None
    """The call waits for approval before its first attempt (never with `first_outcome`)."""
    decision: ApprovalRecord | None = None
    """The approval its Interaction gave at admission (`StartToolCall.decision`)."""
    payload_limit: int | None = None
    """The Interaction's recorded payload limit (None in histories from before it was
    passed down: the serving worker's limit then applies)."""
    task_queue: str | None = None
    """The task queue of the workers that run the tool's body (`@tool(task_queue=...)`),
    fixed when the call starts; None: the Interaction's own."""
    route: Route = Route()
    """Where the call's news goes, and a task it starts reports: `events_to`, the tree's
    event stream (None: the call reports nothing, as in histories from before the
    stream); `report_to`, whom it tells when it waits for a person or holds an unknown;
    `session_id`, the session of the Interaction's turn (a task the call starts
    notifies it)."""
    mcp_session: bool = False
    """`task_queue` is the queue of the worker holding the Interaction's own session of
    the call's MCP server: an attempt nobody picks up there was never sent, and fails
    with `tool.mcp.session_lost` (docs/mcp.md, Stateful servers)."""
    sampling: SamplingAllowance | None = None
    """The call's MCP server may sample: what its requests may use of the Interaction's
    budget (`interaction.sampling`); None: they are refused on the worker."""


class ModelActivityInput(_Payload, Derived):
    """`scope.model`: the retained request, minus what the worker can get without history.

    On the wire (`scope_temporal.wire`) `effect_id` is left out when it is the model
    call's first EffectID, `process_id` when it is the scheduling workflow's id, `model`
    and `options` when they are `"default"` and none; `events_to` naming the caller and
    the usual heartbeat are left out of a marked payload (`true` in an unmarked one, as
    every one written before); the digest is written in base64url.

    The worker rebuilds the exact `ModelEffectRequest`: the messages are `prefix` (from its
    cache, or the workflow's `scope.context` query, checked against the digest) followed
    by `new_messages`; the tool manifest comes from the registered Definition (same
    digest) and `advertised`. A session's turn also names its `base`: `prefix` then
    counts from the start of the whole context, base included, and the base's messages
    come from the session's `scope.context`. See `scope_temporal.context_refs`.
    """

    WIRE_DERIVED: ClassVar[dict[str, Derivation]] = {
        "effect_id": lambda d: model_effect_id(d["process_id"], d["model_call_seq"]),
        "model": lambda d: "default",
        "options": lambda d: {},
    }
    WIRE_MARKED: ClassVar[dict[str, Derivation]] = {"events_to": lambda d: d["process_id"]}
    WIRE_DEFAULTS: ClassVar[dict[str, Derivation]] = {
        "heartbeat": lambda d: USUAL_HEARTBEAT,
        "events_to": lambda d: d["process_id"],
    }
    WIRE_DIGESTS: ClassVar[frozenset[str]] = frozenset({"digest"})
    WIRE_CONTEXT: ClassVar[ContextRule | None] = lambda workflow_id: {("process_id",): workflow_id}

    definition: str
    digest: str
    process_id: str
    effect_id: str
    model_call_seq: int
    model: str
    options: Options
    context_reducer: str | None = None
    applied_signals: tuple[str, ...] = ()
    attempt: int = 1
    incarnation: int = 1
    advertised: tuple[str, ...] = ()
    """Deferred tools advertised so far (the manifest lists them after the others)."""
    prefix: ContextRef
    new_messages: tuple[Message, ...]
    heartbeat: timedelta | None = None
    events_to: str | None = None
    """The workflow hosting the tree's event stream: the streamed text goes there."""
    base: BaseRef | None = None
    instructed: bool = False
    """A session's turn: the request opens with the Definition's instructions (the worker
    takes them from the registered Definition, whose digest pins them)."""
    mcp_tools: tuple[McpListing, ...] = ()
    """The recorded MCP tool lists (the manifest lists their tools after the local ones)."""

    @property
    def own_prefix(self) -> int:
        """How many of the Interaction's own messages (after the base) `prefix` covers."""
        return _own_count(self.prefix, self.base)

    @classmethod
    def of(
        cls,
        request: ModelEffectRequest,
        *,
        prefix: ContextRef,
        advertised: tuple[str, ...],
        heartbeat: timedelta | None,
        events_to: str | None = None,
    ) -> ModelActivityInput:
        """The input for `request`, whose context up to `prefix.count` `prefix` names
        (for a turn: the base and its first own messages)."""
        own = _own_count(prefix, request.base)
        return cls(
            **request.model_dump(include=_SHARED_WITH_REQUEST),
            advertised=advertised,
            prefix=prefix,
            new_messages=request.messages[own:],
            heartbeat=heartbeat,
            events_to=events_to,
            base=request.base,
            instructed=request.instructions is not None,
        )

    def request(
        self,
        messages: tuple[Message, ...],
        tools: tuple[ToolDefinition, ...],
        instructions: str | None = None,
    ) -> ModelEffectRequest:
        """The retained request again, given its messages (for a turn: those after the
        base), the manifest and the Definition's instructions (used when `instructed`)."""
        return ModelEffectRequest(
            **self.model_dump(include=_SHARED_WITH_REQUEST),
            messages=messages,
            tools=tools,
            base=self.base,
            instructions=instructions if self.instructed else None,
        )


def _own_count(prefix: ContextRef, base: BaseRef | None) -> int:
    return prefix.count - (base.count if base is not None else 0)


_SHARED_WITH_REQUEST = {
    *("definition", "digest", "process_id", "effect_id", "model_call_seq", "model", "options"),
    *("context_reducer", "attempt", "incarnation", "applied_signals"),
}


class SessionInput(_Payload):
    """Start (or continue-as-new) one `scope.Session` (its workflow id is the session id)."""

    definition: str
    """The Definition each turn runs."""
    context: dict[str, Any] | None = None
    """The session's run context (its turns get it, with `session_id` added)."""
    approved_tools: tuple[str, ...] = ()
    """Tools approved for the session from its start (each turn may remember more)."""
    continue_as_new_every: int = 100
    """Continue-as-new after this many turns in one run (or when Temporal suggests it);
    the transcript and every record carry over. Clients refuse values below 1; histories
    of older clients may hold them, which run as 1 (continue as new after each turn),
    so they still decode."""
    track_status: bool = False
    """Turns upsert their ScopeStatus search attribute."""
    state: SessionState | None = None
    """Carried by continue-as-new."""


class SessionSend(_Payload):
    """Update `scope.session.send`: one message for the session."""

    message_id: str
    """Deduplicates: the same id and content again is a no-op returning the same receipt."""
    messages: tuple[Message, ...]
    """User messages."""
    definition: str | None = None
    """The Definition the sender expects the session to run (checked when given)."""
    follows: int = 0
    """The latest turn whose end the sender has seen: the message never steers it (it
    waits for the session to take that turn's end, then opens the next turn)."""
    start_digest: str | None = None
    """`session_start_digest` of the sender's run context and approved tools: a session
    started with others refuses the message (None, an older client: not checked)."""


class SessionEndInput(_Payload):
    """Update `scope.session.end`."""

    reason: str = "ended by the host"


class ContextPageRequest(_Payload):
    """Query `scope.context`: messages [start, end) of the model call in flight."""

    start: int
    end: int
    max_bytes: int = 1_000_000
    """Stop early once the page holds this many bytes of JSON (at least one message)."""


class ContextPage(_Payload):
    messages: tuple[Message, ...]
    end: int
    """One past the last message returned; ask again from here while below the end."""


def _attempt_position(workflow_id: str) -> Mapping[Path, Any]:
    """In a ToolCall child, its id names the caller and the call's position; in the
    Interaction running the call's first attempt itself (`on_demand`), its id is the
    caller's."""
    at = ("attempt", "request")
    return call_position(at, workflow_id) or {(*at, "parent_id"): workflow_id}


class ToolActivityInput(_Payload, Derived):
    """`scope.tool`: one attempt. On the wire (`scope_temporal.wire`) what the scheduling
    workflow's id derives is left out of the request (see `_attempt_position`), and the
    usual heartbeat out of a marked payload."""

    WIRE_CONTEXT: ClassVar[ContextRule | None] = _attempt_position
    WIRE_DEFAULTS: ClassVar[dict[str, Derivation]] = {"heartbeat": lambda d: USUAL_HEARTBEAT}

    attempt: ToolAttempt
    heartbeat: timedelta | None = None
    events_to: str | None = None
    """The workflow hosting the tree's event stream, for an MCP call (its server's
    progress notifications go there as `tool_progress` events); None otherwise."""


class SteerInput(_Payload):
    """Signal/update `scope.steer`: user messages for the next model call."""

    signal_id: str
    messages: tuple[Message, ...]
    reply_to: str | None = None
    """A session passing a host's message to its running turn: the session's workflow
    id, which the turn tells whether it took the steer (`scope.session.steer_taken`, a
    `SteerTaken`); the session's `send` returns, or is refused, with that answer."""


class SteerTaken(_Payload):
    """Signal `scope.session.steer_taken`: a turn's answer to a steer its session passed
    with `reply_to`: taken (no code), or refused with the code and message its own
    check gave (the session then refuses the host's send, nothing changed)."""

    signal_id: str
    code: str | None = None
    message: str = ""


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


class TaskCarry(_Payload):
    """A background task's state, carried from one run to the next (continue-as-new)."""

    state: TaskState
    told: tuple[str, ...] = ()
    """The notices already sent to the Interaction (never sent twice)."""
    shown: tuple[str, int, int, str | None] | None = None
    """What the tree's event stream was last told (`TaskNews`)."""
    wait: str | None = None
    runs: int = 1
    """Runs of the task so far (this one included)."""


class TaskInput(_Payload, Flat):
    """Start one `scope.BackgroundTask` (its workflow id is the task id)."""

    WIRE_FLAT: ClassVar[tuple[str, ...]] = (
        *("launch", "ref", "parent_id", "definition", "events_to", "report_to"),
        *("history_events", "carried", "session_id"),
    )

    launch: TaskLaunch
    ref: str
    """ToolCallRef of the call that launched it."""
    parent_id: str
    """The Interaction whose call launched it."""
    definition: str
    """That Interaction's Definition."""
    route: Route = Route()
    """Where the task's news goes: `events_to`, the tree's event stream (None: the task
    reports nothing); `report_to`, the Interaction to tell when it waits for an answer,
    and when no longer; `session_id`, the session whose turn launched it: its lifecycle
    notifications go there (signal `scope.session.notice`) instead of to `parent_id`."""
    history_events: int | None = None
    """The run continues as new before its history passes this many events (None: the
    default, `driver.task_carry.TASK_HISTORY_EVENTS`)."""
    carried: TaskCarry | None = None
    """What the previous run of the task carried over (None: the first run)."""


class TaskAttemptInput(_Payload):
    """`scope.task.attempt`: one background attempt."""

    plan: AttemptPlan
    heartbeat: timedelta
    yield_after: int | None = None
    """Progress reports the task's history has room for (`background.yielding`)."""
    yield_by: YieldMode | None = None
    """How the attempt gives its run up then (None: it cannot; it reports rarely)."""


class TaskReport(_Payload):
    """Signal `scope.task.report`, from a running attempt to its task."""

    attempt: int
    progress: ProgressSummary | None = None
    resumed: str | None = None
    """`resume` accepted the answer with this id (the run goes on with it)."""


class TaskSubmitInput(_Payload):
    """Update `scope.task.submit`: start `tool(arguments)` as the Interaction's task `key`
    (its task id is `<interaction>/task/submit/<key>`; the same key and arguments again
    start nothing)."""

    key: str
    tool: str
    arguments: dict[str, Any]


class TaskCancelInput(_Payload):
    """Update `scope.task.cancel`: stop the task's run."""

    reason: str = ""


class HeartbeatState(_Payload):
    """The heartbeat details of a background attempt: what a retry recovers from."""

    checkpoint: Any = None
    events: int = 0

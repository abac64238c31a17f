"""The per-call context a running tool reads and writes, held in a `contextvars` variable.

The executor activates a context around middleware and body; sync bodies run in a worker
thread with a copy of it, so every function here works in both. Outside a tool call they
raise `RuntimeError`.

- `current_tool_call()`: the `ToolInvocation` (ref, effect id, call, continuation...).
- `require_tool_input(...)`: stop and ask the host for input; the call is re-entered
  later with `tool_input_continuation() == (state, response)`.
- `advertise_tools(...)`: stage deferred tools; committed only if the call succeeds.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, NoReturn

from pydantic import BaseModel, ConfigDict

from scope_temporal.chat import ToolCall
from scope_temporal.errors import TOOL_SCHEMA_INVALID, DefinitionError, InvalidInputRequest
from scope_temporal.ids import Attributed
from scope_temporal.tools.failures import ToolFailure
from scope_temporal.tools.output import json_form
from scope_temporal.tools.validation import check_schema

__all__ = [
    "ToolInputRequired",
    "ToolInvocation",
    "activate",
    "advertise_tools",
    "current_tool_call",
    "require_tool_input",
    "run_context",
    "task_context",
    "tool_input_continuation",
]


class ToolInvocation(Attributed, BaseModel):
    """Everything a tool (and its middleware) knows about the call being executed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    process_id: str
    """Id of the Tool call Process (the ToolCall workflow id when run on Temporal)."""
    ref: str
    """ToolCallRef: `"<process id>/<model call seq>/<call index>"` of the logical call."""
    model_call_seq: int
    """Sequence number of the model call whose response contained this call."""
    call_index: int
    """Position of the call in that response."""
    call: ToolCall
    """The call as the model produced it (raw JSON arguments)."""
    effect_id: str
    """Stable for this logical call across attempts, recovery and continue-as-new: use it
    as the idempotency key with external systems."""
    attempt: int = 1
    """Which entry into the body of the logical call this is (1 = first; more after
    `require_tool_input`); set by the caller."""
    incarnation: int = 1
    """The run of the calling Interaction (1, then one more per continue-as-new)."""
    continuation_state: Any = None
    """The `state` given to `require_tool_input` (JSON form), on re-entry."""
    continuation_response: Any = None
    """The host's validated answer, on re-entry."""
    has_continuation: bool = False
    """True on re-entry after an input wait (state and response may both be None)."""
    deferred_tools: tuple[str, ...] = ()
    """Deferred tool names this call may advertise."""
    context: dict[str, Any] = {}
    """The run context of the Interaction that made the call (`start(..., context=...)`;
    a session's turns hold its `session_id`): identities and ids, never model-visible."""


class ToolInputRequired(Exception):
    """Raised by `require_tool_input`; the executor turns it into an `InputRequired` outcome.

    Tool code should let it propagate (do not catch it with a bare `except Exception`).
    `prompt` and `state` are in JSON form, `response_schema` a checked JSON schema.
    """

    def __init__(self, prompt: Any, response_schema: dict[str, Any], state: Any) -> None:
        super().__init__(prompt)
        self.prompt = prompt
        self.response_schema = response_schema
        self.state = state


@dataclass
class _Active:
    invocation: ToolInvocation
    advertised: list[str] = field(default_factory=list)


_active: ContextVar[_Active] = ContextVar("scope_temporal_tool_call")
_task_context: ContextVar[dict[str, Any] | None] = ContextVar(
    "scope_temporal_task_context", default=None
)


@contextmanager
def activate(invocation: ToolInvocation, advertised: list[str]) -> Iterator[None]:
    """Make `invocation` the current call (executor use only).

    Args:
        invocation: The call being executed.
        advertised: The list `advertise_tools` appends to; shared across nested
            activations of one call so the executor reads it afterwards.
    """
    token = _active.set(_Active(invocation, advertised))
    try:
        yield
    finally:
        _active.reset(token)


@contextmanager
def task_context(context: Mapping[str, Any]) -> Iterator[None]:
    """Make `context` the run context of a background attempt (attempt runner use only)."""
    token = _task_context.set(dict(context))
    try:
        yield
    finally:
        _task_context.reset(token)


def run_context() -> dict[str, Any]:
    """The run context of the code running now: the tool call's (as
    `current_tool_call().context`), or the background task attempt's; {} when the run was
    given none. A copy: changing it changes nothing.

    Raises:
        RuntimeError: called outside a tool body, tool middleware or background attempt.
    """
    active = _active.get(None)
    if active is not None:
        return dict(active.invocation.context)
    context = _task_context.get()
    if context is None:
        raise RuntimeError("run_context() is only available inside a tool call or a task.")
    return dict(context)


def current_tool_call() -> ToolInvocation:
    """The invocation of the tool call running in this context.

    Raises:
        RuntimeError: called outside a tool body or tool middleware.
    """
    return _current().invocation


def require_tool_input(
    prompt: object, response_schema: Mapping[str, Any], state: Any = None
) -> NoReturn:
    """Stop this call and wait for the host to answer `prompt`.

    The call's outcome becomes `InputRequired`; its Process waits, siblings go on. When
    the host answers (validated against `response_schema`), the tool is entered again
    from the start and `tool_input_continuation()` returns `(state, response)`. Side
    effects before this call happen again on re-entry unless the tool skips them using
    the continuation state. The arguments are checked here, before anything is sent.

    Args:
        prompt: What the host/user is asked: a string, or any JSON-serialisable value
            (e.g. a dict of fields to show; the CLI renders it as compact JSON). It is
            kept in JSON form.
        response_schema: JSON schema (a dict) the answer must satisfy.
        state: JSON-serialisable data handed back on re-entry (integers keep precision).

    Raises:
        ToolInputRequired: always, once the arguments are valid; let it propagate.
        InvalidInputRequest: a `TypeError`: `prompt` or `state` is not JSON-serialisable,
            or `response_schema` is not a dict holding a valid JSON schema (code
            `tool.schema_invalid`). Unhandled, it makes the call's outcome unknown.
        RuntimeError: called outside a tool call.
    """
    _current()
    json_prompt = _json_argument("prompt", prompt)
    json_state = _json_argument("state", state)
    if not isinstance(response_schema, Mapping):
        raise InvalidInputRequest(
            "require_tool_input: response_schema must be a dict holding a JSON schema, not "
            f"{type(response_schema).__name__}",
            code=TOOL_SCHEMA_INVALID,
        )
    try:
        check_schema(response_schema)
    except DefinitionError as error:
        raise InvalidInputRequest(
            f"require_tool_input: response_schema is not valid: {error.message}",
            code=TOOL_SCHEMA_INVALID,
        ) from None
    raise ToolInputRequired(json_prompt, dict(response_schema), json_state)


def _json_argument(name: str, value: object) -> Any:
    try:
        return json_form(value)
    except ValueError as error:  # pydantic_core: not serialisable, or circular
        raise InvalidInputRequest(
            f"require_tool_input: {name} must be JSON-serialisable (a str, number, bool, "
            f"None, list, dict or pydantic model), not {type(value).__name__}: {error}"
        ) from None


def tool_input_continuation() -> tuple[Any, Any] | None:
    """`(state, response)` when this entry answers an input wait; None on first entry.

    Raises:
        RuntimeError: called outside a tool call.
    """
    invocation = _current().invocation
    if not invocation.has_continuation:
        return None
    return invocation.continuation_state, invocation.continuation_response


def advertise_tools(*names: str) -> None:
    """Stage deferred tools to be advertised to the model from its next call.

    The advertisement commits only if this call succeeds; on failure, unknown outcome or
    input wait nothing is advertised. Staging a name twice is harmless.

    Raises:
        ToolFailure: a name is not a deferred tool this call may advertise (the call then
            fails definitely unless the tool handles it; none of `names` is staged).
        RuntimeError: called outside a tool call.
    """
    active = _current()
    allowed = active.invocation.deferred_tools
    refused = [name for name in names if name not in allowed]
    if refused:
        listed = ", ".join(f"'{name}'" for name in refused)
        raise ToolFailure(f"cannot advertise {listed}: not a deferred tool of this agent")
    active.advertised.extend(name for name in dict.fromkeys(names) if name not in active.advertised)


def _current() -> _Active:
    try:
        return _active.get()
    except LookupError:
        raise RuntimeError(
            "no tool call is running in this context: current_tool_call, require_tool_input, "
            "tool_input_continuation and advertise_tools work only inside a tool body or "
            "tool middleware run by the executor"
        ) from None

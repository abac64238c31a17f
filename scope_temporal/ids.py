"""Stable identities, derived only from the parent's id and the call's position.

Pure functions (no Temporal import): the state machine, the workflows and the client all
derive the same ids, so a replayed or continued-as-new workflow finds the same children.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from scope_temporal.errors import ProtocolError

MAX_ID_CHARS = 256
"""Longest signal or answer id accepted: ids are kept for deduplication, so a bounded
size keeps a flood of hostile ids from growing the state without end."""


def tool_call_ref(process_id: str, model_call_seq: int, call_index: int) -> str:
    """ToolCallRef `"<process id>/<model call seq>/<call index>"` of one logical call."""
    return f"{process_id}/{model_call_seq}/{call_index}"


class ToolCallRef(BaseModel):
    """A ToolCallRef's parts; `str(ref)` is the ref, `ToolCallRef.parse` its inverse.

    `parse(str(ref)) == ref` for every ref, including process ids that hold `/` (a
    delegate's `<root>/delegate/3/0` or a session's turns): the last two parts are the
    position, everything before them the process id.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    process_id: str
    """The Interaction that made the call."""
    model_call_seq: int
    """Which model call of that Interaction asked for it (1-based)."""
    call_index: int
    """Its position in that model call's batch (0-based)."""

    @classmethod
    def parse(cls, ref: str) -> ToolCallRef:
        """The parts of `"<process id>/<model call seq>/<call index>"`.

        Raises:
            ProtocolError: `ref` is not a ToolCallRef (says which part is wrong).
        """
        process_id, _, position = ref.rpartition("/")
        process_id, _, seq = process_id.rpartition("/")
        if not process_id or not _canonical(seq, least=1) or not _canonical(position, least=0):
            raise ProtocolError(
                f"{ref!r} is not a ToolCallRef: expected '<process id>/<model call seq "
                "(1, 2, ...)>/<call index (0, 1, ...)>', e.g. 'ops-1a2b/3/0'."
            )
        return cls(process_id=process_id, model_call_seq=int(seq), call_index=int(position))

    def __str__(self) -> str:
        return tool_call_ref(self.process_id, self.model_call_seq, self.call_index)


class Attribution(BaseModel):
    """Who is making one model or tool call, and which try of it this is.

    Read it as `current_tool_call().attribution` in a tool and `request.attribution` in a
    `Model`, e.g. to correlate logs or to tell a re-entry or a new attempt from the first.
    Two calls with equal attributions are the same entry of the same call.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    process_id: str
    """The Process whose Effect this is: for a model call its Interaction; for a tool call
    its Tool call process (`<interaction>/tool/<step>/<index>`, the ToolCall workflow id)."""
    step: int = Field(default=1, ge=1)
    """The Interaction's model call sequence (1-based, counted across continue-as-new): a
    model call's own, a tool call's the one whose response asked for it."""
    attempt: int = Field(default=1, ge=1)
    """1 the first try. A model call: one more for each new Effect of the same step (a
    retry after the model provably did not run, a fallback model, a re-send of an unknown
    outcome by policy or by the host). A tool call: the entry into its body (2 and on are
    re-entries after `require_tool_input`, with `has_continuation`); a tool call is never
    re-run by the framework."""
    incarnation: int = Field(default=1, ge=1)
    """The run of the Interaction that made the call: 1 the first, one more after each
    continue-as-new (a state carried by an earlier release counts on from 1). Delegates
    count their own."""


class _Attributable(Protocol):
    @property
    def process_id(self) -> str: ...
    @property
    def model_call_seq(self) -> int: ...
    @property
    def attempt(self) -> int: ...
    @property
    def incarnation(self) -> int: ...


class Attributed:
    """Mixin of `ModelRequest` and `ToolInvocation`: their `attribution`."""

    @property
    def attribution(self: _Attributable) -> Attribution:
        """This call's identities: process, step (`model_call_seq`), attempt, incarnation."""
        return Attribution(
            process_id=self.process_id,
            step=self.model_call_seq,
            attempt=self.attempt,
            incarnation=self.incarnation,
        )


def _canonical(number: str, *, least: int) -> bool:
    """Whether `number` is a decimal integer >= `least` written without leading zeros."""
    return number.isdigit() and str(int(number)) == number and int(number) >= least


def tool_call_process_id(parent_id: str, model_call_seq: int, call_index: int) -> str:
    """Workflow id of a ToolCall child."""
    return f"{parent_id}/tool/{model_call_seq}/{call_index}"


def tool_call_position(process_id: str) -> tuple[str, int, int] | None:
    """The (parent id, model call seq, call index) a ToolCall child's id names: the
    inverse of `tool_call_process_id`; None for any other id."""
    parent, marker, position = process_id.rpartition("/tool/")
    seq, _, index = position.partition("/")
    if not parent or not marker or not _canonical(seq, least=0) or not _canonical(index, least=0):
        return None
    return parent, int(seq), int(index)


def delegate_process_id(parent_id: str, model_call_seq: int, call_index: int) -> str:
    """Workflow id of a Delegate child."""
    return f"{parent_id}/delegate/{model_call_seq}/{call_index}"


def turn_process_id(session_id: str, turn: int) -> str:
    """Workflow id of a session's turn (an Interaction, child of the session)."""
    return f"{session_id}/turn/{turn}"


def model_effect_id(process_id: str, model_call_seq: int, retry: int = 0) -> str:
    """EffectID of one model call: `<process id>/model/<seq>`, and for its retries (a
    call that did not run, or a re-sent unknown one) `<process id>/model/<seq>/retry/<n>`."""
    first = f"{process_id}/model/{model_call_seq}"
    return first if retry == 0 else f"{first}/retry/{retry}"


def call_effect_id(process_id: str, model_call_seq: int, call_index: int) -> str:
    """EffectID of one tool or delegate call: stable for the logical call (idempotency key)."""
    return f"{process_id}/call/{model_call_seq}/{call_index}"


def wait_id(process_id: str, entry: int) -> str:
    """WaitID of the input wait raised by the `entry`-th entry into a tool body."""
    return f"{process_id}/wait/{entry}"


def approval_wait_id(process_id: str) -> str:
    """WaitID of a tool call's approval wait (opened before its first entry)."""
    return f"{process_id}/wait/approval"


def task_id(effect_id: str) -> str:
    """Workflow id of the background task a call launches, from the call's EffectID:
    `<process id>/call/<seq>/<index>` gives `<process id>/task/<seq>/<index>`."""
    owner, _, position = effect_id.rpartition("/call/")
    return f"{owner}/task/{position}"


def task_owner(process_id: str) -> str:
    """The Interaction owning a tool call process (`<interaction>/tool/<seq>/<index>`)."""
    return process_id.rpartition("/tool/")[0]

"""Stable identities, derived only from the parent's id and the call's position.

Pure functions (no Temporal import): the state machine, the workflows and the client all
derive the same ids, so a replayed or continued-as-new workflow finds the same children.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

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


def _canonical(number: str, *, least: int) -> bool:
    """Whether `number` is a decimal integer >= `least` written without leading zeros."""
    return number.isdigit() and str(int(number)) == number and int(number) >= least


def tool_call_process_id(parent_id: str, model_call_seq: int, call_index: int) -> str:
    """Workflow id of a ToolCall child."""
    return f"{parent_id}/tool/{model_call_seq}/{call_index}"


def delegate_process_id(parent_id: str, model_call_seq: int, call_index: int) -> str:
    """Workflow id of a Delegate child."""
    return f"{parent_id}/delegate/{model_call_seq}/{call_index}"


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

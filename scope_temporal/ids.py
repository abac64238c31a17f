"""Stable identities, derived only from the parent's id and the call's position.

Pure functions (no Temporal import): the state machine, the workflows and the client all
derive the same ids, so a replayed or continued-as-new workflow finds the same children.
"""

from __future__ import annotations

MAX_ID_CHARS = 256
"""Longest signal or answer id accepted: ids are kept for deduplication, so a bounded
size keeps a flood of hostile ids from growing the state without end."""


def tool_call_ref(process_id: str, model_call_seq: int, call_index: int) -> str:
    """ToolCallRef `"<process id>/<model call seq>/<call index>"` of one logical call."""
    return f"{process_id}/{model_call_seq}/{call_index}"


def tool_call_process_id(parent_id: str, model_call_seq: int, call_index: int) -> str:
    """Workflow id of a ToolCall child."""
    return f"{parent_id}/tool/{model_call_seq}/{call_index}"


def delegate_process_id(parent_id: str, model_call_seq: int, call_index: int) -> str:
    """Workflow id of a Delegate child."""
    return f"{parent_id}/delegate/{model_call_seq}/{call_index}"


def model_effect_id(process_id: str, model_call_seq: int) -> str:
    """EffectID of one model call."""
    return f"{process_id}/model/{model_call_seq}"


def call_effect_id(process_id: str, model_call_seq: int, call_index: int) -> str:
    """EffectID of one tool or delegate call: stable for the logical call (idempotency key)."""
    return f"{process_id}/call/{model_call_seq}/{call_index}"


def wait_id(process_id: str, entry: int) -> str:
    """WaitID of the input wait raised by the `entry`-th entry into a tool body."""
    return f"{process_id}/wait/{entry}"


def task_id(effect_id: str) -> str:
    """Workflow id of the background task a call launches, from the call's EffectID:
    `<process id>/call/<seq>/<index>` gives `<process id>/task/<seq>/<index>`."""
    owner, _, position = effect_id.rpartition("/call/")
    return f"{owner}/task/{position}"


def task_owner(process_id: str) -> str:
    """The Interaction owning a tool call process (`<interaction>/tool/<seq>/<index>`)."""
    return process_id.rpartition("/tool/")[0]

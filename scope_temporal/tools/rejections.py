"""The model-visible texts for calls whose body did not produce the result.

Each function returns the `ToolResult` the model sees for one call. The wording is part
of the contract (tests and prompts rely on the key phrases): "not available",
"not authorized", "invalid arguments", "not executed" + "token limit", "denied approval".
"""

from __future__ import annotations

from scope_temporal.chat import ToolCall, ToolResult

__all__ = [
    "approval_denied",
    "error_result",
    "invalid_arguments",
    "not_approved",
    "not_authorized",
    "not_available",
    "not_executed_token_limit",
    "silent_acknowledgement",
]

_MAX_NAME_CHARS = 100


def not_available(call: ToolCall) -> ToolResult:
    """The call names no tool bound to this agent (disposition `rejected`)."""
    return error_result(
        call,
        f"Tool '{_name(call)}' is not available. Available tools are listed in the tool manifest.",
    )


def not_authorized(call: ToolCall, permission: str) -> ToolResult:
    """The agent was not granted the tool's permission (disposition `rejected`)."""
    return error_result(
        call,
        f"Tool '{_name(call)}' is not authorized: "
        f"this agent was not granted '{permission}' permission.",
    )


def not_approved(call: ToolCall) -> ToolResult:
    """The call needs approval and carries no approval decision (a call started without
    its Interaction's admission; disposition `rejected`)."""
    return error_result(
        call,
        f"Tool '{_name(call)}' is not authorized: the call needs approval and no approval "
        "decision is on record, so it was not run.",
    )


def invalid_arguments(call: ToolCall, error: str) -> ToolResult:
    """The arguments do not fit the tool's schema; it was not run (disposition `rejected`).

    Args:
        call: The rejected call.
        error: Which field is wrong and why (see `validation.validate_arguments`).
    """
    return error_result(
        call,
        f"Tool '{_name(call)}' was not run: invalid arguments: {error}. "
        "Fix the arguments and call it again.",
    )


def approval_denied(call: ToolCall, by: str, reason: str) -> ToolResult:
    """The call needed approval and was denied (disposition `rejected`); it was not run.

    Args:
        call: The denied call.
        by: Who denied it, for the model ("a person", "the approval policy").
        reason: Why, as the denier said it (may be empty).
    """
    why = f": {reason}" if reason else " (no reason given)"
    return error_result(
        call,
        f"Tool '{_name(call)}' was not run: the call was denied approval by {by}{why}. "
        "Do not repeat the same call unchanged.",
    )


def not_executed_token_limit(call: ToolCall) -> ToolResult:
    """The response was cut by the output token limit, so none of its calls ran."""
    return error_result(
        call,
        f"Tool call '{_name(call)}' was not executed: the response hit the output token "
        "limit before the tool calls were complete. Make the call again if it is still needed.",
    )


def silent_acknowledgement(call: ToolCall) -> ToolResult:
    """What the model sees instead of a `silent` ToolOutput's content (not an error)."""
    return ToolResult(
        call_id=call.id, name=call.name, content="Done. The output was delivered to the user."
    )


def error_result(call: ToolCall, content: str) -> ToolResult:
    """A model-visible error result for `call` (a refusal's, or a `ToolFailure`'s message)."""
    return ToolResult(call_id=call.id, name=call.name, content=content, is_error=True)


def _name(call: ToolCall) -> str:
    """The called name, shortened: the model may have produced anything there."""
    name = call.name
    return name if len(name) <= _MAX_NAME_CHARS else name[: _MAX_NAME_CHARS - 3] + "..."

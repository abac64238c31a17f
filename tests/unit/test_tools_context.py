"""The per-call context functions outside a tool, and the model-visible rejection texts."""

from __future__ import annotations

import pytest

from scope_temporal.chat import ToolCall
from scope_temporal.tools import (
    advertise_tools,
    current_tool_call,
    require_tool_input,
    tool_input_continuation,
)
from scope_temporal.tools.rejections import (
    invalid_arguments,
    not_authorized,
    not_available,
    not_executed_token_limit,
    silent_acknowledgement,
)

CALL = ToolCall(id="call-9", name="deploy", arguments="{}")


def test_context_functions_outside_a_tool_raise_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="no tool call is running"):
        current_tool_call()
    with pytest.raises(RuntimeError, match="no tool call is running"):
        tool_input_continuation()
    with pytest.raises(RuntimeError, match="no tool call is running"):
        advertise_tools("x")
    with pytest.raises(RuntimeError, match="no tool call is running"):
        require_tool_input("?", {"type": "boolean"})


def test_rejection_texts() -> None:
    results = {
        "not available": not_available(CALL),
        "not authorized": not_authorized(CALL, "write"),
        "invalid arguments": invalid_arguments(CALL, "count: 'x' is not of type 'integer'"),
        "not executed": not_executed_token_limit(CALL),
    }
    for phrase, result in results.items():
        assert phrase in result.content
        assert result.is_error is True
        assert (result.call_id, result.name) == ("call-9", "deploy")
    assert "Tool 'deploy' is not available" in results["not available"].content
    assert "not granted 'write' permission" in results["not authorized"].content
    assert "count: 'x' is not of type 'integer'" in results["invalid arguments"].content
    assert "token limit" in results["not executed"].content


def test_silent_acknowledgement_is_not_an_error() -> None:
    ack = silent_acknowledgement(CALL)
    assert ack.is_error is False
    assert ack.content == "Done. The output was delivered to the user."


def test_called_names_are_shortened_in_texts() -> None:
    huge = ToolCall(id="c", name="n" * 5000, arguments="{}")
    assert len(not_available(huge).content) < 300
    assert not_available(huge).name == huge.name

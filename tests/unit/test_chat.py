"""Chat values round-trip through JSON exactly and say which field is wrong."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from scope_temporal import FinishReason, Message, Options, Response, ToolCall, ToolResult, Usage


def test_messages_round_trip_through_json_exactly() -> None:
    messages = [
        Message.system("be brief"),
        Message.user("hi"),
        Message.assistant("let me look", [ToolCall(id="c1", name="f", arguments='{"n": 1}')]),
        Message.tool([ToolResult(call_id="c1", name="f", content="ok", is_error=True)]),
    ]
    for message in messages:
        assert Message.model_validate_json(message.model_dump_json()) == message
    assert messages[2].tool_calls[0].arguments == '{"n": 1}'
    assert messages[3].tool_results[0].is_error


def test_big_integers_keep_their_precision() -> None:
    big = 2**70 + 1
    response = Response(
        message=Message.assistant("x"),
        finish_reason=FinishReason.stop,
        usage=Usage(input_tokens=big, output_tokens=1),
    )
    again = Response.model_validate_json(response.model_dump_json())
    assert again.usage is not None and again.usage.input_tokens == big
    call = ToolCall(id="c", name="f", arguments=json.dumps({"n": big}))
    assert json.loads(ToolCall.model_validate_json(call.model_dump_json()).arguments)["n"] == big
    options = Options(seed=big, stop=["\n"])  # extra provider options are kept
    assert Options.model_validate_json(options.model_dump_json()) == options


def test_validation_errors_name_the_field() -> None:
    with pytest.raises(ValidationError) as error:
        Message.model_validate({"role": "robot", "parts": []})
    assert "role" in str(error.value)
    with pytest.raises(ValidationError) as error:
        ToolResult.model_validate({"call_id": "c", "name": "f"})
    assert "content" in str(error.value)
    with pytest.raises(ValidationError):
        ToolCall.model_validate({"id": "c", "name": "f", "surprise": 1})


def test_text_helpers() -> None:
    assert Message.assistant().text == ""
    assert Message.user("a").text == "a"
    assert Message.assistant(tool_calls=[ToolCall(id="1", name="f")]).tool_calls[0].name == "f"

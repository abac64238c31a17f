"""ScriptedModel and the reply builders: the test double users script their agents with."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from scope_temporal.chat import FinishReason, Message, Options, Response, ToolCall, Usage
from scope_temporal.models import (
    InvalidModelResponse,
    Model,
    ModelRequest,
    ScriptedModel,
    ScriptExhausted,
    ToolDefinition,
    reply,
)

REPO = Path(__file__).resolve().parents[2]


def request(text: str = "hi", seq: int = 1) -> ModelRequest:
    return ModelRequest(messages=(Message.user(text),), model_call_seq=seq)


# --- reply builders ------------------------------------------------------------------


def test_reply_text_is_a_final_stop_reply() -> None:
    r = reply.text("done", usage=Usage(input_tokens=3, output_tokens=1), model="m")
    assert r.finish_reason is FinishReason.stop
    assert r.message == Message.assistant("done")
    assert r.usage == Usage(input_tokens=3, output_tokens=1)
    assert r.model == "m"


def test_reply_tool_calls_numbers_ids_per_response_and_encodes_arguments() -> None:
    first = reply.tool_calls(("search_docs", {"query": "x"}), ("other", {"n": 1, "a": [1, 2]}))
    second = reply.tool_calls(("search_docs", {"query": "y"}))
    assert first.finish_reason is FinishReason.tool_calls
    assert first.message.tool_calls == [
        ToolCall(id="call_1", name="search_docs", arguments='{"query": "x"}'),
        ToolCall(id="call_2", name="other", arguments='{"n": 1, "a": [1, 2]}'),
    ]
    assert [c.id for c in second.message.tool_calls] == ["call_1"]
    assert first.message.text == ""


def test_reply_tool_calls_keeps_raw_string_arguments_and_explicit_ids() -> None:
    r = reply.tool_calls(
        ("search_docs", '{"query": '),
        ("other", {}, "my-id"),
        ("third", "{}"),
        ToolCall(id="x", name="given"),
        text="let me look",
    )
    assert r.message.text == "let me look"
    assert [(c.id, c.name, c.arguments) for c in r.message.tool_calls] == [
        ("call_1", "search_docs", '{"query": '),
        ("my-id", "other", "{}"),
        ("call_3", "third", "{}"),
        ("x", "given", "{}"),
    ]


def test_reply_length_may_carry_text_and_tool_calls() -> None:
    r = reply.length("partial", tool_calls=[("search_docs", {"query": "x"})])
    assert r.finish_reason is FinishReason.length
    assert r.message.text == "partial"
    assert [c.name for c in r.message.tool_calls] == ["search_docs"]
    assert reply.length().message.parts == ()


def test_reply_response_defaults_finish_reason_from_content() -> None:
    assert reply.response("x").finish_reason is FinishReason.stop
    assert reply.response(tool_calls=[("t", {})]).finish_reason is FinishReason.tool_calls
    assert reply.response("x", finish_reason="content_filter").finish_reason is (
        FinishReason.content_filter
    )
    with pytest.raises(ValueError):
        reply.response("x", finish_reason="bogus")


def test_reply_rejects_malformed_tool_call_specs() -> None:
    with pytest.raises(TypeError, match="tool call #1"):
        reply.tool_calls(("only-a-name",))  # type: ignore[arg-type]


# --- ScriptedModel: script mode --------------------------------------------------------


async def test_scripted_model_consumes_steps_in_order_and_records_requests() -> None:
    model = ScriptedModel([reply.tool_calls(("t", {})), reply.text("done")])
    first, second = request("a", 1), request("b", 2)
    assert (await model.complete(first)).finish_reason is FinishReason.tool_calls
    assert model.remaining == 1
    assert (await model.complete(second)).message.text == "done"
    assert model.requests == [first, second]
    assert model.remaining == 0


async def test_scripted_model_raises_exception_steps_and_records_the_request() -> None:
    lost = TimeoutError("model call lost")
    model = ScriptedModel([lost, reply.text("after")])
    with pytest.raises(TimeoutError) as caught:
        await model.complete(request("a"))
    assert caught.value is lost
    assert (await model.complete(request("b"))).message.text == "after"
    assert [r.messages[0].text for r in model.requests] == ["a", "b"]


async def test_scripted_model_past_the_end_raises_script_exhausted() -> None:
    model = ScriptedModel([reply.text("only")])
    await model.complete(request())
    with pytest.raises(ScriptExhausted, match=r"model call #2 .*only 1 step"):
        await model.complete(request(seq=2))
    assert len(model.requests) == 2
    assert isinstance(ScriptExhausted("x"), Exception)


async def test_scripted_model_with_empty_script_raises_on_first_call() -> None:
    with pytest.raises(ScriptExhausted):
        await ScriptedModel([]).complete(request())


def test_scripted_model_rejects_steps_that_are_not_responses_or_exceptions() -> None:
    with pytest.raises(TypeError, match="script step 1"):
        ScriptedModel([reply.text("ok"), "not a response"])  # type: ignore[list-item]


# --- ScriptedModel: function mode ------------------------------------------------------


async def test_scripted_model_sync_function_sees_each_request() -> None:
    model = ScriptedModel(lambda req: reply.text(f"echo {req.messages[-1].text}"))
    assert (await model.complete(request("one"))).message.text == "echo one"
    assert (await model.complete(request("two"))).message.text == "echo two"
    assert len(model.requests) == 2
    assert model.remaining == 0


async def test_scripted_model_async_function_is_awaited() -> None:
    async def answer(req: ModelRequest) -> Response:
        await asyncio.sleep(0)
        return reply.text(f"seq {req.model_call_seq}")

    model = ScriptedModel(answer)
    assert (await model.complete(request(seq=7))).message.text == "seq 7"


async def test_scripted_model_function_errors_propagate() -> None:
    def broken(req: ModelRequest) -> Response:
        raise InvalidModelResponse("garbage")

    model = ScriptedModel(broken)
    with pytest.raises(InvalidModelResponse):
        await model.complete(request())
    assert len(model.requests) == 1


async def test_scripted_model_function_must_return_a_response() -> None:
    model = ScriptedModel(lambda req: "text")  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match="not a Response"):
        await model.complete(request())


# --- protocol values -------------------------------------------------------------------


def test_scripted_model_satisfies_the_model_protocol() -> None:
    assert isinstance(ScriptedModel([]), Model)


def test_model_request_is_a_frozen_json_round_trippable_value() -> None:
    req = ModelRequest(
        messages=(
            Message.system("be brief"),
            Message.user("hi"),
            Message.assistant("x", [ToolCall(id="c1", name="t", arguments='{"a": 1}')]),
        ),
        tools=(ToolDefinition(name="t", description="d", parameters={"type": "object"}),),
        options=Options(temperature=0.2, max_tokens=None, n=1),
        model_call_seq=3,
    )
    assert ModelRequest.model_validate_json(req.model_dump_json()) == req
    assert json.loads(req.model_dump_json())["options"]["n"] == 1
    with pytest.raises(ValueError):
        req.model_call_seq = 4  # type: ignore[misc]
    with pytest.raises(ValueError):
        ModelRequest(messages=(), model_call_seq=0)
    assert ModelRequest(messages=[Message.user("x")]).tools == ()
    assert ToolDefinition(name="t").parameters == {"type": "object"}


def test_importing_models_does_not_import_openai() -> None:
    code = (
        "import sys, scope_temporal.models as m\n"
        "assert 'openai' not in sys.modules, 'openai imported eagerly'\n"
        "assert m.OpenAIChatModel.__name__ == 'OpenAIChatModel'\n"
        "assert 'openai' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)

"""Tool middleware: declared order, inner/outer placement around validation (rule 26)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from scope_temporal.chat import ToolCall
from scope_temporal.errors import TOOL_EXECUTION_FAILED, TOOL_INPUT_INVALID, DefinitionError
from scope_temporal.tools import (
    Failed,
    Middleware,
    Rejected,
    Succeeded,
    ToolFailure,
    ToolInvocation,
    Unknown,
    chain,
    current_tool_call,
    execute_tool,
    inner,
    tool,
)
from scope_temporal.tools.middleware import CallNext, is_inner


def invocation(name: str, arguments: Any) -> ToolInvocation:
    return ToolInvocation(
        process_id="root/tool/1/0",
        ref="root/1/0",
        model_call_seq=1,
        call_index=0,
        call=ToolCall(id="call-1", name=name, arguments=json.dumps(arguments)),
        effect_id="effect-1",
    )


def recorder(log: list[str], label: str) -> Middleware:
    async def middleware(invocation: ToolInvocation, call_next: CallNext) -> object:
        log.append(f"{label}>")
        try:
            return await call_next(invocation)
        finally:
            log.append(f"<{label}")

    return middleware


async def test_c26_middleware_runs_in_declared_order_and_schema_validation_precedes_inner_middleware() -> None:  # noqa: E501  # fmt: skip
    log: list[str] = []

    @tool(middleware=[recorder(log, "tool-outer"), inner(recorder(log, "tool-inner"))])
    def double(n: int) -> str:
        log.append("body")
        return str(2 * n)

    worker = [inner(recorder(log, "worker-inner")), recorder(log, "worker-outer")]
    outcome = await execute_tool(double, invocation("double", {"n": 21}), middleware=worker)
    assert isinstance(outcome, Succeeded)
    assert outcome.result.content == "42"
    assert log == [
        "worker-outer>",
        "tool-outer>",
        "worker-inner>",
        "tool-inner>",
        "body",
        "<tool-inner",
        "<worker-inner",
        "<tool-outer",
        "<worker-outer",
    ]

    log.clear()
    rejected = await execute_tool(double, invocation("double", {"n": "x"}), middleware=worker)
    assert isinstance(rejected, Rejected)
    assert rejected.code == TOOL_INPUT_INVALID
    # Outer middleware saw the call; validation stopped it before any inner one or the body.
    assert log == ["worker-outer>", "tool-outer>", "<tool-outer", "<worker-outer"]


async def test_outer_middleware_may_repair_arguments_before_validation() -> None:
    async def coerce(invocation: ToolInvocation, call_next: CallNext) -> object:
        arguments = json.loads(invocation.call.arguments)
        fixed = invocation.call.model_copy(
            update={"arguments": json.dumps({"n": int(arguments["n"])})}
        )
        return await call_next(invocation.model_copy(update={"call": fixed}))

    seen: list[str] = []

    @tool(middleware=[coerce])
    def square(n: int) -> str:
        seen.append(current_tool_call().call.arguments)
        return str(n * n)

    outcome = await execute_tool(square, invocation("square", {"n": "7"}))
    assert isinstance(outcome, Succeeded)
    assert outcome.result.content == "49"
    assert seen == ['{"n": 7}']


async def test_middleware_can_short_circuit_and_transform_results() -> None:
    runs: list[int] = []

    async def cache(invocation: ToolInvocation, call_next: CallNext) -> object:
        if json.loads(invocation.call.arguments)["n"] == 0:
            return "cached"
        return f"[{await call_next(invocation)}]"

    @tool(middleware=[cache])
    def work(n: int) -> str:
        runs.append(n)
        return str(n)

    cached = await execute_tool(work, invocation("work", {"n": 0}))
    wrapped = await execute_tool(work, invocation("work", {"n": 3}))
    assert isinstance(cached, Succeeded) and isinstance(wrapped, Succeeded)
    assert (cached.result.content, wrapped.result.content) == ("cached", "[3]")
    assert runs == [3]


async def test_middleware_exceptions_are_classified_like_the_body() -> None:
    async def refuse(invocation: ToolInvocation, call_next: CallNext) -> object:
        raise ToolFailure("quota exhausted")

    async def crash(invocation: ToolInvocation, call_next: CallNext) -> object:
        raise RuntimeError("middleware bug")

    @tool
    def noop() -> str:
        return "ran"

    failed = await execute_tool(noop, invocation("noop", {}), middleware=[refuse])
    assert isinstance(failed, Failed)
    assert failed.result.content == "quota exhausted"
    unknown = await execute_tool(noop, invocation("noop", {}), middleware=[inner(crash)])
    assert isinstance(unknown, Unknown)
    assert unknown.code == TOOL_EXECUTION_FAILED
    assert unknown.diagnostic == "RuntimeError: middleware bug"


async def test_chain_composes_first_as_outermost() -> None:
    log: list[str] = []

    async def terminal(invocation: ToolInvocation) -> object:
        log.append("terminal")
        return "done"

    combined = chain(recorder(log, "a"), recorder(log, "b"), recorder(log, "c"))
    assert await combined(invocation("x", {}), terminal) == "done"
    assert log == ["a>", "b>", "c>", "terminal", "<c", "<b", "<a"]
    assert not is_inner(combined)


def test_chain_of_inner_middleware_is_inner_and_mixing_is_refused() -> None:
    a, b = recorder([], "a"), recorder([], "b")
    assert is_inner(chain(inner(a), inner(b)))
    assert inner(inner(a)) == inner(a)
    assert is_inner(inner(a)) and not is_inner(a)
    with pytest.raises(DefinitionError, match="cannot mix inner and outer"):
        chain(a, inner(b))

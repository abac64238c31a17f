"""CONFORMANCE 57: a Definition's response-size bound (`max_response_bytes`) applies to
its model responses and tool outcomes; one over it is unknown with its request kept, as
for the worker-wide limit. Through LocalRunner (the activities' own code) and on the
Definition and Registry."""

from __future__ import annotations

import pytest

from scope_temporal import (
    Definition,
    DefinitionError,
    Message,
    ScriptedModel,
    ToolResult,
    reply,
    settle_tool_result,
    tool,
)
from scope_temporal.interaction.effects import ToolEffectRequest
from scope_temporal.registry import Registry
from scope_temporal.testing import LocalRunner
from tests.unit.tool_rounds import WAIT

BOUND = 2_000


@tool(permission="read")
def dump(size: int) -> str:
    """Return `size` characters."""
    return "x" * size


def runner(script: list[object], *, bound: int | None = BOUND) -> LocalRunner:
    bounded = Definition("bounded", tools=[dump], max_response_bytes=bound)
    other = Definition("other", tools=[dump])
    model = ScriptedModel(script)  # type: ignore[arg-type]
    return LocalRunner(definitions=[bounded, other], tools=[dump], models={"default": model})


async def test_c57_a_tool_outcome_over_the_definitions_bound_is_unknown_with_its_request() -> None:
    script = [reply.tool_calls(("dump", {"size": BOUND})), reply.text("done")]
    run = await runner(script).start("bounded", [Message.user("go")])
    [unknown] = (await run.idle()).unknown_effects
    assert unknown.kind == "tool" and "max_response_bytes" in unknown.diagnostic
    request = unknown.request
    assert isinstance(request, ToolEffectRequest) and request.call.name == "dump"
    result = ToolResult(call_id=request.call.id, name="dump", content="kept elsewhere")
    await run.resolve(unknown, settle_tool_result(request, result, "succeeded"))
    assert (await run.result(timeout=WAIT)).text == "done"


async def test_c57_under_the_bound_and_in_other_definitions_results_are_recorded() -> None:
    script = [reply.tool_calls(("dump", {"size": BOUND // 2})), reply.text("done")]
    run = await runner(script).start("bounded", [Message.user("go")])
    assert (await run.result(timeout=WAIT)).text == "done"
    script = [reply.tool_calls(("dump", {"size": BOUND})), reply.text("done")]
    run = await runner(script).start("other", [Message.user("go")])
    assert (await run.result(timeout=WAIT)).text == "done"  # only the worker's limit


async def test_c57_a_model_response_over_the_bound_is_unknown_and_not_called_again() -> None:
    local = runner([reply.text("y" * BOUND), reply.text("never")])
    run = await local.start("bounded", [Message.user("go")])
    [unknown] = (await run.idle()).unknown_effects
    assert unknown.kind == "model" and "max_response_bytes" in unknown.diagnostic
    assert unknown.request.messages == (Message.user("go"),)  # type: ignore[union-attr]
    assert len(local.models["default"].requests) == 1  # type: ignore[attr-defined]


def test_c57_the_bound_is_checked_and_digested_only_when_set() -> None:
    for bad in (0, -1, True, 1.5):
        with pytest.raises(DefinitionError, match="max_response_bytes"):
            Definition("d", max_response_bytes=bad)  # type: ignore[arg-type]
    assert Definition("d").digest == Definition("d", max_response_bytes=None).digest
    assert Definition("d").digest != Definition("d", max_response_bytes=10).digest
    with pytest.raises(DefinitionError, match="over the worker's payload limit"):
        Registry([Definition("d", max_response_bytes=2_000)], payload_limit=1_000)
    registry = Registry([Definition("d", max_response_bytes=500)], payload_limit=1_000)
    assert registry.response_limit("d").bytes == 500
    assert registry.response_limit("unknown").bytes == 1_000

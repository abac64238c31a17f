"""CONFORMANCE 45 live: continue-as-new at a round boundary changes nothing observable."""

from __future__ import annotations

from temporalio.testing import WorkflowEnvironment

from scope_temporal import Definition, ModelRequest, Output, Response, ScriptedModel, reply, tool
from tests.live.harness import serving


@tool(permission="read")
def count(n: int) -> str:
    """Count."""
    return f"counted {n}"


def planner(request: ModelRequest) -> Response:
    done = sum(1 for m in request.messages if m.role == "tool")
    if done < 6:
        return reply.tool_calls(("count", {"n": done}))
    return reply.text(f"finished after {done} rounds")


async def run_once(env: WorkflowEnvironment, every: int | None) -> tuple[Output, int]:
    definition = Definition("long", tools=[count], max_model_calls=10)
    async with serving(
        env, [definition], tools=[count], models={"default": ScriptedModel(planner)}
    ) as scope:
        handle = await scope.start("long", "count to six", continue_as_new_every=every)
        out = await handle.result()
        snap = await handle.snapshot()
    return out, len(snap.context)


async def test_c45_continue_as_new_keeps_output_and_model_call_count(
    temporal_env: WorkflowEnvironment,
) -> None:
    plain, plain_context = await run_once(temporal_env, None)
    continued, continued_context = await run_once(temporal_env, 2)
    assert continued.text == plain.text == "finished after 6 rounds"
    assert continued.model_calls == plain.model_calls == 7
    assert continued_context == plain_context


async def test_c45_the_chain_really_continued_as_new(
    temporal_env: WorkflowEnvironment, tool_call_mode: str
) -> None:
    definition = Definition("long2", tools=[count], max_model_calls=10)
    async with serving(
        temporal_env, [definition], tools=[count], models={"default": ScriptedModel(planner)}
    ) as scope:
        handle = await scope.start("long2", "count to six", continue_as_new_every=2)
        await handle.result()
    runs = [e async for e in temporal_env.client.list_workflows(f"WorkflowId = '{handle.id}'")]
    assert len(runs) >= 3  # 7 model calls, a new run every 2
    # ToolCall children keep parent-derived ids across runs: seq keeps counting
    children = [
        e.id
        async for e in temporal_env.client.list_workflows(
            f"WorkflowType = 'scope.ToolCall' AND RootWorkflowId = '{handle.id}'"
        )
    ]
    if tool_call_mode == "always":
        assert sorted(children) == sorted(f"{handle.id}/tool/{seq}/0" for seq in range(1, 7))
    else:  # every call settled in its first attempt: none needed a workflow of its own
        assert children == []

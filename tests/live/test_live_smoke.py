from __future__ import annotations

from temporalio.testing import WorkflowEnvironment

from scope_temporal import Definition, Message, ScriptedModel, reply, tool
from tests.live.harness import serving


@tool(permission="read")
def lookup(query: str) -> str:
    """Look up."""
    return f"found {query}"


async def test_c2_live_one_tool_round(temporal_env: WorkflowEnvironment) -> None:
    model = ScriptedModel([reply.tool_calls(("lookup", {"query": "x"})), reply.text("done")])
    definition = Definition("smoke", tools=[lookup])
    async with serving(
        temporal_env, [definition], tools=[lookup], models={"default": model}
    ) as scope:
        handle = await scope.start("smoke", [Message.user("go")])
        out = await handle.result()
    assert out.text == "done"
    assert out.model_calls == 2
    assert model.requests[1].messages[-1].tool_results[0].content == "found x"

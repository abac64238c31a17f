"""CONFORMANCE 2 and 25 live: one tool round; what only the host sees stays out of the model."""

from __future__ import annotations

from temporalio.testing import WorkflowEnvironment

from scope_temporal import Definition, Message, ScriptedModel, ToolOutput, reply, tool
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


@tool(permission="read")
def report(silent: bool) -> ToolOutput:
    """A report with host-only extras."""
    return ToolOutput(
        "report ready",
        for_user={"table": "HOST-ONLY-TABLE"},
        ref="HOST-ONLY-REF",
        metadata={"rows": 2**70},
        silent=silent,
    )


async def test_c25_live_extras_reach_the_snapshot_and_never_the_model(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel(
        [
            reply.tool_calls(("report", {"silent": False}), ("report", {"silent": True})),
            reply.text("done"),
        ]
    )
    definition = Definition("extras", tools=[report], max_concurrent_tool_calls=2)
    async with serving(
        temporal_env, [definition], tools=[report], models={"default": model}
    ) as scope:
        handle = await scope.start("extras", [Message.user("go")])
        await handle.result()
        snap = await handle.snapshot()
    loud, quiet = snap.root.settled_results[0].entries
    for entry in (loud, quiet):
        assert (entry.for_user, entry.ref) == ({"table": "HOST-ONLY-TABLE"}, "HOST-ONLY-REF")
        assert entry.metadata == {"rows": 2**70}
    sent = model.requests[1].model_dump_json()
    assert "report ready" in sent and "delivered to the user" in sent
    assert "HOST-ONLY" not in sent and str(2**70) not in sent
    assert "HOST-ONLY" not in "".join(m.model_dump_json() for m in snap.root.context)

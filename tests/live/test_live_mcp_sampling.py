"""An MCP server's sampling request, live on the dev server, in both tool-call mappings
(docs/mcp.md, Sampling): the call's Tool call workflow answers it with one
`scope.mcp.sample` activity (never retried) under the Interaction's model and budget, the
server's tool gets the model's reply, and the `tools/call` reaches the server once; over
the budget, or not allowed by the Definition, the server gets MCP's error."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment

from scope_temporal import Definition, ScriptedModel, reply
from scope_temporal.mcp import McpSampling, McpServer, McpStdio
from tests.live.harness import serving

ROOT = Path(__file__).resolve().parents[2]


def faulty(log: Path) -> McpStdio:
    env = {"MCP_CALL_LOG": str(log), "PYTHONPATH": str(ROOT)}
    return McpStdio(sys.executable, ["-m", "tests.mcp_servers.faulty"], env=env)


def calls(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


async def _activities(env: WorkflowEnvironment, workflow_id: str) -> list[tuple[str, int]]:
    """(activity type, retry policy's maximum attempts) of each activity it scheduled."""
    history = await env.client.get_workflow_handle(workflow_id).fetch_history()
    return [
        (
            e.activity_task_scheduled_event_attributes.activity_type.name,
            e.activity_task_scheduled_event_attributes.retry_policy.maximum_attempts,
        )
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]


async def test_live_mcp_sampling_runs_as_a_model_call_of_the_interaction_and_the_call_is_sent_once(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    log = tmp_path / "calls.jsonl"
    definition = Definition(
        "live-mcp-sample",
        mcp_servers=[McpServer("faulty", sampling=McpSampling(max_tokens=5))],
    )
    model = ScriptedModel(
        [
            reply.tool_calls(("faulty_sample", {"text": "sky colour?"})),
            reply.text("blue"),
            reply.text("ok"),
        ]
    )
    async with serving(
        temporal_env, [definition], models={"default": model}, mcp_servers={"faulty": faulty(log)}
    ) as scope:
        handle = await scope.start("live-mcp-sample", "go")
        output = await handle.result()
        kinds = [e.kind async for e in handle.events()]
    assert output.text == "ok" and output.model_calls == 3
    [result] = model.requests[2].messages[-1].tool_results
    assert result.content == "sample answered: blue"
    assert model.requests[1].options.max_tokens == 5 and model.requests[1].tools == ()
    assert [c["tool"] for c in calls(log)] == ["sample", "sampled"]  # tools/call sent once
    assert "wait_opened" not in kinds  # nobody was asked
    # the sampling model call is an activity of the call's Tool call workflow, never retried
    child = await _activities(temporal_env, f"{handle.id}/tool/1/0")
    assert ("scope.mcp.sample", 1) in child
    assert [a for a, _ in child].count("scope.mcp.sample") == 1


async def test_live_mcp_sampling_over_the_budget_or_not_allowed_gets_an_mcp_error(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    log = tmp_path / "calls.jsonl"
    # max_model_calls=2: one made, one kept for the Interaction's next call: none left
    spent = Definition(
        "live-mcp-sample-spent", mcp_servers=[McpServer("faulty", sampling=True)], max_model_calls=2
    )
    denies = Definition("live-mcp-sample-denied", mcp_servers=[McpServer("faulty")])
    model = ScriptedModel(
        [
            reply.tool_calls(("faulty_sample", {"text": "a"})),
            reply.text("ok"),
            reply.tool_calls(("faulty_sample", {"text": "b"})),
            reply.text("ok"),
        ]
    )
    async with serving(
        temporal_env,
        [spent, denies],
        models={"default": model},
        mcp_servers={"faulty": faulty(log)},
    ) as scope:
        first = await scope.start("live-mcp-sample-spent", "go")
        assert (await first.result()).model_calls == 2
        second = await scope.start("live-mcp-sample-denied", "go")
        assert (await second.result()).model_calls == 2
    [over] = model.requests[1].messages[-1].tool_results
    assert over.content.startswith(
        "sample refused by the client: sampling refused: no model call is left in the budget"
    )
    [denied] = model.requests[3].messages[-1].tool_results
    assert denied.content == (
        "sample refused by the client: Sampling not supported: Definition "
        "'live-mcp-sample-denied' does not let MCP server 'faulty' use its model (declare "
        "McpServer('faulty', sampling=True) to allow it)"
    )
    assert len(model.requests) == 4  # the model was never asked for the server
    assert [c["tool"] for c in calls(log)] == ["sample", "sample"]
    child = await _activities(temporal_env, f"{first.id}/tool/1/0")  # it held the wait
    assert "scope.mcp.sample" not in [a for a, _ in child]

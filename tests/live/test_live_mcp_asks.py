"""What an MCP server sends back mid-call, live on the dev server, in both tool-call
mappings: progress notifications as `tool_progress` events in the tree's stream (one
signal each, bounded), and an elicitation request as the ordinary tool input wait,
answered by `handle.answer` (validated), the call held open on the worker and sent once."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment

from scope_temporal import Definition, InvalidToolInput, ScriptedModel, reply
from scope_temporal.interaction.events import Event, ToolProgressEvent
from scope_temporal.mcp import McpServer, McpStdio
from tests.live.harness import eventually, serving

ROOT = Path(__file__).resolve().parents[2]


def faulty(log: Path) -> McpStdio:
    env = {"MCP_CALL_LOG": str(log), "PYTHONPATH": str(ROOT)}
    return McpStdio(sys.executable, ["-m", "tests.mcp_servers.faulty"], env=env)


def calls(log: Path) -> list[str]:
    if not log.exists():
        return []
    return [json.loads(line)["tool"] for line in log.read_text().splitlines()]


async def test_live_mcp_progress_becomes_bounded_tool_progress_events(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    log = tmp_path / "calls.jsonl"
    definition = Definition("live-mcp-progress", mcp_servers=[McpServer("faulty")])
    model = ScriptedModel(
        [
            reply.tool_calls(("faulty_progress", {"count": 3, "pause": 1.2})),
            reply.tool_calls(("faulty_progress", {"count": 400, "pause": 0})),
            reply.text("ok"),
        ]
    )
    async with serving(
        temporal_env, [definition], models={"default": model}, mcp_servers={"faulty": faulty(log)}
    ) as scope:
        handle = await scope.start("live-mcp-progress", "go")
        assert (await handle.result()).text == "ok"
        seen: list[Event] = [e async for e in handle.events()]
    progress = [e for e in seen if isinstance(e, ToolProgressEvent)]
    started = [e for e in seen if e.kind == "tool_started"]
    first = [e for e in progress if e.ref == started[0].ref]  # type: ignore[union-attr]
    chatty = [e for e in progress if e.ref == started[1].ref]  # type: ignore[union-attr]
    assert [(e.progress, e.message) for e in first] == [
        (1.0, "step 1 of 3"),
        (2.0, "step 2 of 3"),
        (3.0, "step 3 of 3"),
    ]
    assert {e.process_id for e in first} == {started[0].child_id}  # type: ignore[union-attr]
    assert 1 <= len(chatty) <= 3 and chatty[-1].progress == 400.0  # 400 sent, coalesced
    assert calls(log) == ["progress", "progress"]
    history = await temporal_env.client.get_workflow_handle(handle.id).fetch_history()
    signals = [
        e
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
    ]
    assert len(signals) <= 20  # not one per notification


async def test_live_mcp_elicitation_is_a_tool_input_wait_answered_and_sent_once(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    log = tmp_path / "calls.jsonl"
    definition = Definition("live-mcp-elicit", mcp_servers=[McpServer("faulty")])
    model = ScriptedModel(
        [reply.tool_calls(("faulty_elicit_twice", {"text": "x"})), reply.text("ok")]
    )
    async with serving(
        temporal_env, [definition], models={"default": model}, mcp_servers={"faulty": faulty(log)}
    ) as scope:
        handle = await scope.start("live-mcp-elicit", "go")
        snap = await eventually(handle.snapshot, lambda s: bool(s.pending_tool_inputs), timeout=30)
        [first] = snap.pending_tool_inputs
        assert first.prompt == {
            "mcp_elicitation": "first?",
            "server": "faulty",
            "tool": "elicit_twice",
        }
        with pytest.raises(InvalidToolInput):  # refused, nothing sent, the wait stays open
            await handle.answer(first, "bad", {"action": "accept", "content": {"answer": 1}})
        await handle.answer(first, "a1", {"action": "accept", "content": {"answer": "one"}})
        snap = await eventually(
            handle.snapshot,
            lambda s: (
                [p.prompt for p in s.pending_tool_inputs]
                == [{"mcp_elicitation": "second?", "server": "faulty", "tool": "elicit_twice"}]
            ),
            timeout=30,
        )
        await handle.answer(snap.pending_tool_inputs[0], "a2", {"action": "decline"})
        assert (await handle.result()).text == "ok"
        kinds = [e.kind async for e in handle.events()]
    [result] = model.requests[1].messages[-1].tool_results
    assert result.content == 'elicit accept: {"answer": "one"} | elicit decline: null'
    assert calls(log) == ["elicit_twice", "elicited", "elicited"]  # the call sent once
    assert kinds.count("wait_opened") == 2 and kinds.count("wait_answered") == 2

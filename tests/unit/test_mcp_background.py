"""MCP calls as background tools, in-process (`LocalRunner`), in both tool-call mappings,
against the test-owned MCP server `tests.mcp_servers.faulty` over stdio: a long call moves
to the background with the contract of a `@background_tool`, and the server's call log
proves each call reached it once (docs/mcp.md, Background calls)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from scope_temporal import (
    Definition,
    DefinitionError,
    InvalidTaskSubmission,
    Message,
    ScopeError,
)
from scope_temporal.definition import ToolCallWorkflows
from scope_temporal.errors import MCP_LIST_INVALID
from scope_temporal.mcp import McpServer
from scope_temporal.models import ScriptedModel, reply
from scope_temporal.testing import LocalRun, LocalRunner
from tests.live.background_tools import follow
from tests.unit.test_mcp_local import calls, faulty

MODES: tuple[ToolCallWorkflows, ...] = ("always", "on_demand")
MOVING = McpServer(
    "faulty", background={"progress", "hang", "elicit", "crash"}, foreground_timeout=0.3
)


async def run_with(
    runners: list[LocalRunner],
    log: Path,
    mode: ToolCallWorkflows,
    plan: Any,
    server: McpServer = MOVING,
) -> tuple[ScriptedModel, LocalRun]:
    definition = Definition("mcp-bg", mcp_servers=[server], tool_call_workflows=mode)
    model = ScriptedModel(plan)
    runner = LocalRunner(
        definitions=[definition], models={"default": model}, mcp_servers={"faulty": faulty(log)}
    )
    runners.append(runner)
    return model, await runner.start("mcp-bg", [Message.user("go")])


def envelopes(model: ScriptedModel) -> list[dict[str, Any]]:
    """Every tool-result envelope the model saw, in order."""
    return [
        json.loads(m.tool_results[0].content)
        for r in model.requests
        for m in r.messages[-1:]
        if m.role == "tool"
    ]


def received(log: Path) -> list[str]:
    return [c["tool"] for c in calls(log)]


@pytest.mark.parametrize("mode", MODES)
async def test_mcp_background_call_moves_and_its_output_arrives_sent_once(
    runners: list[LocalRunner], log: Path, mode: ToolCallWorkflows
) -> None:
    call = ("faulty_progress", {"count": 3, "pause": 0.5})
    model, run = await run_with(runners, log, mode, follow(call))
    await run.result(timeout=30)
    schema = next(t for t in model.requests[0].tools if t.name == "faulty_progress").parameters
    assert schema["properties"]["run_in_background"]["type"] == "boolean"
    assert {"task_status", "task_output", "task_cancel"} <= {
        t.name for t in model.requests[0].tools
    }
    seen = envelopes(model)
    assert seen[0]["type"] == "launch_result"
    assert (seen[-1]["type"], seen[-1]["status"], seen[-1]["data"]) == (
        "output",
        "completed",
        "progressed 3",
    )
    # the server's progress notifications are the task's progress events
    # (at most one a second: the latest, those in between coalesced)
    messages = [e["message"] for e in seen[-1]["events"]]
    assert messages[0] == "step 1 of 3" and messages[-1] == "step 3 of 3"
    [task] = run.snapshot().tasks
    assert (task.status, task.attempt, task.progress.events) == ("completed", 1, len(messages))
    assert received(log) == ["progress"]


@pytest.mark.parametrize("mode", MODES)
async def test_mcp_progress_in_the_background_is_task_progress_not_tool_progress(
    runners: list[LocalRunner], log: Path, mode: ToolCallWorkflows
) -> None:
    call = ("faulty_progress", {"count": 3, "pause": 0.5})
    _, run = await run_with(runners, log, mode, follow(call))
    seen: list[Any] = []

    async def follow_events() -> None:
        async for event in run.events():
            seen.append(event)
            if event.kind == "task_progress" and event.task.status == "completed":
                return

    await asyncio.wait_for(follow_events(), 30)
    kinds = [e.kind for e in seen]
    assert "tool_progress" not in kinds
    counts = [e.task.progress.events for e in seen if e.kind == "task_progress"]
    assert counts[-1] >= 2 and counts == sorted(counts)
    assert seen[-1].task.progress.last_message == "step 3 of 3"


@pytest.mark.parametrize("mode", MODES)
async def test_mcp_run_in_background_sends_the_call_in_its_attempt_and_hands_it_over(
    runners: list[LocalRunner], log: Path, mode: ToolCallWorkflows
) -> None:
    call = ("faulty_progress", {"count": 2, "pause": 0.2, "run_in_background": True})
    model, run = await run_with(runners, log, mode, follow(call))
    await run.result(timeout=30)
    seen = envelopes(model)
    assert seen[0]["type"] == "launch_result"
    assert (seen[-1]["status"], seen[-1]["data"]) == ("completed", "progressed 2")
    assert received(log) == ["progress"]  # the flag was not sent to the server
    assert calls(log)[0]["arguments"] == {"count": 2, "pause": 0.2}


@pytest.mark.parametrize("mode", MODES)
async def test_mcp_task_cancel_sends_the_server_a_cancellation(
    runners: list[LocalRunner], log: Path, mode: ToolCallWorkflows
) -> None:
    call = ("faulty_hang", {"text": "long"})
    model, run = await run_with(runners, log, mode, follow(call, then="task_cancel"))
    await run.result(timeout=30)
    launch, update = envelopes(model)[:2]
    assert launch["type"] == "launch_result"
    assert (update["type"], update["status"]) == ("update", "canceled")
    await run.idle()
    [task] = run.snapshot().tasks
    assert task.status == "canceled"
    # received once, then MCP's notifications/cancelled reached the server's tool
    assert received(log) == ["hang", "cancelled"]


@pytest.mark.parametrize("mode", MODES)
async def test_mcp_elicitation_during_a_call_that_may_move_is_refused_with_mcps_error(
    runners: list[LocalRunner], log: Path, mode: ToolCallWorkflows
) -> None:
    model, run = await run_with(runners, log, mode, follow(("faulty_elicit", {"text": "which?"})))
    await run.result(timeout=30)
    [result] = envelopes(model)
    assert (result["type"], result["status"]) == ("foreground_result", "failed")
    assert "elicitation refused" in result["error"] and "background" in result["error"]
    assert run.snapshot().pending_tool_inputs == []
    assert received(log) == ["elicit"]


@pytest.mark.parametrize("mode", MODES)
async def test_mcp_sampling_during_a_call_that_may_move_is_refused_even_when_allowed(
    runners: list[LocalRunner], log: Path, mode: ToolCallWorkflows
) -> None:
    server = McpServer("faulty", background={"sample"}, foreground_timeout=0.3, sampling=True)
    plan = follow(("faulty_sample", {"text": "which?"}))
    model, run = await run_with(runners, log, mode, plan, server)
    await run.result(timeout=30)
    [result] = envelopes(model)
    assert result["type"] == "foreground_result", result
    assert "sampling refused" in json.dumps(result) and "background" in json.dumps(result)
    assert len(model.requests) == 2  # the Interaction's own calls: no sampling call
    assert received(log) == ["sample"]


@pytest.mark.parametrize("mode", MODES)
async def test_mcp_ambiguous_end_in_the_foreground_is_still_an_unknown_effect(
    runners: list[LocalRunner], log: Path, mode: ToolCallWorkflows
) -> None:
    plan = [reply.tool_calls(("faulty_crash", {"text": "boom"})), reply.text("x")]
    _, run = await run_with(runners, log, mode, plan)
    [unknown] = (await run.idle()).unknown_effects
    assert unknown.request.call.name == "faulty_crash"
    assert "whether the tool ran is unknown" in (unknown.diagnostic or "")
    assert run.snapshot().tasks == []
    assert received(log) == ["crash"]


async def test_mcp_background_calls_cannot_be_submitted_by_a_host(
    runners: list[LocalRunner], log: Path
) -> None:
    # the Interaction runs (a call held in the foreground) while the host submits
    plan = [reply.tool_calls(("faulty_hang", {"text": "a", "run_in_background": False}))]
    _, run = await run_with(runners, log, "always", plan)
    await asyncio.wait_for(_until_received(log, ["hang"]), 10)
    with pytest.raises(InvalidTaskSubmission, match="MCP tool"):
        await run.submit_task("faulty_hang", {"text": "x"}, key="k1")
    await run.cancel()
    assert [c["arguments"] for c in calls(log) if c["tool"] == "hang"] == [{"text": "a"}]


async def _until_received(log: Path, tools: list[str]) -> None:
    while received(log)[: len(tools)] != tools:
        await asyncio.sleep(0.05)


async def test_mcp_background_names_the_server_does_not_offer_fail_the_listing(
    runners: list[LocalRunner], log: Path
) -> None:
    server = McpServer("faulty", allow=["echo"], background={"hang"})
    definition = Definition("mcp-bg-bad", mcp_servers=[server])
    runner = LocalRunner(
        definitions=[definition],
        models={"default": ScriptedModel([reply.text("x")])},
        mcp_servers={"faulty": faulty(log)},
    )
    runners.append(runner)
    with pytest.raises(ScopeError, match=r"background names \['hang'\]") as refused:
        await (await runner.start("mcp-bg-bad", "go")).result(timeout=10)
    assert refused.value.code == MCP_LIST_INVALID
    assert received(log) == []


def test_mcp_background_declaration_is_in_the_digest_only_when_declared() -> None:
    plain = Definition("d", mcp_servers=[McpServer("faulty")])
    default = Definition("d", mcp_servers=[McpServer("faulty", background=False)])
    moving = Definition("d", mcp_servers=[McpServer("faulty", background=True)])
    later = Definition(
        "d", mcp_servers=[McpServer("faulty", background=True, foreground_timeout=5)]
    )
    assert plain.digest == default.digest
    assert len({plain.digest, moving.digest, later.digest}) == 3
    assert not plain.binds_background_tools and moving.binds_background_tools
    assert "task_status" in moving.tools.names and "task_status" not in plain.tools.names
    for wrong in ({"retry_safe": True}, {"session": "interaction"}):
        with pytest.raises(DefinitionError, match="background"):
            McpServer("faulty", background=True, **wrong)


@pytest.mark.parametrize("mode", MODES)
async def test_mcp_background_task_that_ends_tells_its_interaction_at_the_next_turn(
    runners: list[LocalRunner], log: Path, mode: ToolCallWorkflows
) -> None:
    launch = ("faulty_progress", {"count": 1, "pause": 0.1, "run_in_background": True})
    busy = ("faulty_progress", {"count": 3, "pause": 0.8, "run_in_background": False})
    plan = [reply.tool_calls(launch), reply.tool_calls(busy), reply.text("told")]
    model, run = await run_with(runners, log, mode, plan)
    assert (await run.result(timeout=30)).text == "told"
    last = model.requests[-1].messages
    assert last[-2].role == "tool" and last[-1].role == "user"  # after the busy call's result
    notice = json.loads(last[-1].text or "")
    assert (notice["type"], notice["tool"], notice["status"], notice["data"]) == (
        "task_notification",
        "faulty_progress",
        "completed",
        "progressed 1",
    )
    assert received(log) == ["progress", "progress"]

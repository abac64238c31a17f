"""MCP servers as tool sources, live on the dev server, in both tool-call mappings: the
tool list recorded in history (replay and later Interactions), each call sent at most
once (the server's call log), a server killed mid-call an unknown Effect, and a
third-party server from the package index (`mcp-server-time`) called for real."""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment

from scope_temporal import Definition, ScriptedModel, ToolResult, reply, settle_tool_result
from scope_temporal.definition import ToolCallWorkflows
from scope_temporal.mcp import McpServer, McpStdio
from scope_temporal.names import MCP_LIST_ACTIVITY
from scope_temporal.testing.replay import replay_history
from tests.live.harness import eventually, in_mode, serving

ROOT = Path(__file__).resolve().parents[2]


def faulty(log: Path, variant_file: Path | None = None) -> McpStdio:
    env = {"MCP_CALL_LOG": str(log), "PYTHONPATH": str(ROOT)}
    if variant_file is not None:
        env["MCP_VARIANT_FILE"] = str(variant_file)
    return McpStdio(sys.executable, ["-m", "tests.mcp_servers.faulty"], env=env)


def calls(log: Path) -> list[str]:
    if not log.exists():
        return []
    return [json.loads(line)["tool"] for line in log.read_text().splitlines()]


async def _list_activities(env: WorkflowEnvironment, workflow_id: str) -> list[Any]:
    history = await env.client.get_workflow_handle(workflow_id).fetch_history()
    scheduled = [
        e.activity_task_scheduled_event_attributes
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    return [a for a in scheduled if a.activity_type.name == MCP_LIST_ACTIVITY]


async def test_live_mcp_calls_reach_the_server_once_and_the_list_is_in_history(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    log = tmp_path / "calls.jsonl"
    definition = Definition("live-mcp", mcp_servers=[McpServer("faulty", permission="read")])
    model = ScriptedModel(
        [
            reply.tool_calls(
                ("faulty_echo", {"text": "hi"}),
                ("faulty_fail", {"text": "f"}),
                ("faulty_refuse", {"text": "r"}),
            ),
            reply.text("done"),
        ]
    )
    servers = {"faulty": faulty(log)}
    async with serving(
        temporal_env, [definition], models={"default": model}, mcp_servers=servers
    ) as scope:
        handle = await scope.start("live-mcp", "go")
        assert (await handle.result()).text == "done"
    echo, failed, refused = model.requests[1].messages[-1].tool_results
    assert (echo.content, echo.is_error) == ("hi", False)
    assert failed.is_error and "failed on purpose" in failed.content
    assert refused.is_error and "JSON-RPC error -32602" in refused.content
    assert calls(log) == ["echo", "fail", "refuse"]
    [listed] = await _list_activities(temporal_env, handle.id)
    assert listed.retry_policy.maximum_attempts == 1
    # what the worker was told to reach the server never enters history
    history = await temporal_env.client.get_workflow_handle(handle.id).fetch_history()
    assert "tests.mcp_servers.faulty" not in history.to_json()
    assert str(log) not in history.to_json()


async def test_live_mcp_server_killed_mid_call_is_unknown_and_never_sent_again(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    log = tmp_path / "calls.jsonl"
    definition = Definition("live-mcp-crash", mcp_servers=[McpServer("faulty")])
    model = ScriptedModel(
        [
            reply.tool_calls(("faulty_crash", {"text": "boom"})),
            reply.tool_calls(("faulty_echo", {"text": "after"})),
            reply.text("recovered"),
        ]
    )
    async with serving(
        temporal_env,
        [definition],
        models={"default": model},
        mcp_servers={"faulty": faulty(log)},
    ) as scope:
        handle = await scope.start("live-mcp-crash", "go")
        snap = await eventually(handle.snapshot, lambda s: bool(s.unknown_effects), timeout=30)
        [unknown] = snap.unknown_effects
        assert unknown.request.mcp is not None and unknown.request.mcp.name == "crash"
        assert calls(log) == ["crash"]
        result = ToolResult(call_id=unknown.request.call.id, name="faulty_crash", content="ran")
        await handle.resolve(unknown, settle_tool_result(unknown.request, result, "succeeded"))
        assert (await handle.result()).text == "recovered"
    assert calls(log) == ["crash", "echo"]


async def test_live_mcp_list_changed_is_seen_by_the_next_interaction_and_the_old_replays(
    temporal_env: WorkflowEnvironment, tmp_path: Path, tool_call_mode: ToolCallWorkflows
) -> None:
    log, variant = tmp_path / "calls.jsonl", tmp_path / "variant"
    definition = Definition("live-mcp-list", mcp_servers=[McpServer("faulty", permission="read")])
    model = ScriptedModel(
        [
            reply.tool_calls(("faulty_echo", {"text": "one"})),
            reply.text("first"),
            reply.tool_calls(("faulty_shout", {"text": "two"})),
            reply.text("second"),
        ]
    )
    async with serving(
        temporal_env,
        [definition],
        models={"default": model},
        mcp_servers={"faulty": faulty(log, variant)},
    ) as scope:
        first = await scope.start("live-mcp-list", "go")
        assert (await first.result()).text == "first"
        variant.write_text("changed")  # the running server now lists `shout`, not `echo`
        second = await scope.start("live-mcp-list", "go")
        assert (await second.result()).text == "second"
    before = {t.name for t in model.requests[0].tools}
    after = {t.name for t in model.requests[2].tools}
    assert "faulty_echo" in before and "faulty_shout" not in before
    assert "faulty_shout" in after and "faulty_echo" not in after
    assert model.requests[3].messages[-1].tool_results[0].content == "TWO"
    assert calls(log) == ["echo", "shout"]
    history = await temporal_env.client.get_workflow_handle(first.id).fetch_history()
    replayed = await replay_history(history, [in_mode(definition, tool_call_mode)])
    assert replayed.replay_failure is None


async def test_live_mcp_third_party_time_server_called_through_an_interaction(
    temporal_env: WorkflowEnvironment,
) -> None:
    definition = Definition(
        "live-mcp-time",
        mcp_servers=[McpServer("time", allow=("get_current_time",), permission="read")],
    )
    model = ScriptedModel(
        [
            reply.tool_calls(("time_get_current_time", {"timezone": "Europe/Paris"})),
            reply.text("told"),
        ]
    )
    time_server = McpStdio(sys.executable, ["-m", "mcp_server_time", "--local-timezone", "UTC"])
    async with serving(
        temporal_env, [definition], models={"default": model}, mcp_servers={"time": time_server}
    ) as scope:
        handle = await scope.start("live-mcp-time", "What time is it in Paris?")
        assert (await handle.result()).text == "told"
    assert [t.name for t in model.requests[0].tools] == ["time_get_current_time"]
    [result] = model.requests[1].messages[-1].tool_results
    assert not result.is_error
    assert json.loads(result.content)["timezone"] == "Europe/Paris"


async def test_live_mcp_cancelling_the_interaction_sends_mcp_cancellation(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    log = tmp_path / "calls.jsonl"
    definition = Definition(
        "live-mcp-cancel",
        mcp_servers=[McpServer("faulty")],
        tool_heartbeat_timeout=timedelta(seconds=2),
    )
    model = ScriptedModel([reply.tool_calls(("faulty_hang", {"text": "long"})), reply.text("x")])
    async with serving(
        temporal_env, [definition], models={"default": model}, mcp_servers={"faulty": faulty(log)}
    ) as scope:
        handle = await scope.start("live-mcp-cancel", "go")
        await eventually(lambda: asyncio.sleep(0, calls(log)), lambda c: c == ["hang"])
        await handle.cancel()
        await eventually(
            lambda: asyncio.sleep(0, calls(log)), lambda c: c == ["hang", "cancelled"], timeout=20
        )


async def test_live_mcp_retry_safe_tool_is_sent_again_when_the_server_dies_mid_call(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    """Declared safe to retry by the Definition (never by the server's idempotentHint,
    which `flaky` carries): the call whose server died is sent again, not unknown."""
    log = tmp_path / "calls.jsonl"
    definition = Definition(
        "live-mcp-retry", mcp_servers=[McpServer("faulty", retry_safe={"flaky"})]
    )
    model = ScriptedModel([reply.tool_calls(("faulty_flaky", {"text": "x"})), reply.text("ok")])
    async with serving(
        temporal_env, [definition], models={"default": model}, mcp_servers={"faulty": faulty(log)}
    ) as scope:
        handle = await scope.start("live-mcp-retry", "go")
        assert (await handle.result()).text == "ok"
    [result] = model.requests[1].messages[-1].tool_results
    assert (result.content, result.is_error) == ("flaky answered on send 2", False)
    assert calls(log) == ["flaky", "flaky"]

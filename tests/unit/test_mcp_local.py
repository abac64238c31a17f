"""MCP servers as tool sources, in-process (`LocalRunner`), against the test-owned MCP
server `tests.mcp_servers.faulty` over stdio (a real subprocess, the real MCP SDK).

The server's call log proves how often each call reached it."""

from __future__ import annotations

import json
import os
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from scope_temporal import (
    ApprovalPolicy,
    ConfigurationError,
    Definition,
    ScopeError,
    ToolResult,
    settle_tool_result,
    tool,
)
from scope_temporal.errors import MCP_LIST_FAILED, MCP_LIST_INVALID, PAYLOAD_TOO_LARGE
from scope_temporal.mcp import McpHttp, McpServer, McpStdio
from scope_temporal.models import ScriptedModel, reply
from scope_temporal.testing import LocalRunner

ROOT = Path(__file__).resolve().parents[2]


def faulty(log: Path, variant: str = "") -> McpStdio:
    env = {"MCP_CALL_LOG": str(log), "MCP_VARIANT": variant, "PYTHONPATH": str(ROOT)}
    return McpStdio(sys.executable, ["-m", "tests.mcp_servers.faulty"], env=env)


def calls(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def runner_for(
    made: list[LocalRunner],
    definition: Definition,
    model: ScriptedModel,
    log: Path,
    variant: str = "",
    **options: Any,
) -> LocalRunner:
    runner = LocalRunner(
        definitions=[definition],
        models={"default": model},
        mcp_servers={"faulty": faulty(log, variant)},
        **options,
    )
    made.append(runner)
    return runner


@tool(permission="read")
def local_note(text: str) -> str:
    """A local tool beside the MCP ones."""
    return f"noted {text}"


async def test_mcp_tools_are_listed_after_local_tools_and_each_call_reaches_the_server_once(
    runners: list[LocalRunner], log: Path
) -> None:
    definition = Definition(
        "mcp-basic", tools=[local_note], mcp_servers=[McpServer("faulty", permission="read")]
    )
    model = ScriptedModel(
        [
            reply.tool_calls(("faulty_echo", {"text": "hi"}), ("faulty_add", {"a": 2, "b": 3})),
            reply.text("done"),
        ]
    )
    runner = LocalRunner(
        definitions=[definition],
        tools=[local_note],
        models={"default": model},
        mcp_servers={"faulty": faulty(log)},
    )
    runners.append(runner)
    out = await (await runner.start("mcp-basic", "go")).result()
    assert out.text == "done"
    names = [t.name for t in model.requests[0].tools]
    assert names[0] == "local_note" and names[1:3] == ["faulty_echo", "faulty_add"]
    echo = next(t for t in model.requests[0].tools if t.name == "faulty_echo")
    assert echo.parameters["properties"] == {"text": {"type": "string"}}
    results = model.requests[1].messages[-1].tool_results
    assert [r.content for r in results] == ["hi", "5"]
    assert [c["tool"] for c in calls(log)] == ["echo", "add"]


async def test_mcp_is_error_and_json_rpc_error_are_definite_failures_the_model_sees(
    runners: list[LocalRunner], log: Path
) -> None:
    definition = Definition("mcp-errors", mcp_servers=[McpServer("faulty")])
    model = ScriptedModel(
        [
            reply.tool_calls(("faulty_fail", {"text": "a"}), ("faulty_refuse", {"text": "b"})),
            reply.text("seen"),
        ]
    )
    run = await runner_for(runners, definition, model, log).start("mcp-errors", "go")
    assert (await run.result()).text == "seen"
    failed, refused = model.requests[1].messages[-1].tool_results
    assert failed.is_error and failed.content == "failed on purpose: a"
    assert refused.is_error and "refused on purpose: b" in refused.content
    assert "JSON-RPC error -32602" in refused.content
    assert [c["tool"] for c in calls(log)] == ["fail", "refuse"]
    assert run.snapshot().unknown_effects == []


async def test_mcp_internal_error_is_unknown_it_may_come_from_a_tool_that_had_begun(
    runners: list[LocalRunner], log: Path
) -> None:
    definition = Definition("mcp-internal", mcp_servers=[McpServer("faulty")])
    model = ScriptedModel([reply.tool_calls(("faulty_internal", {"text": "i"})), reply.text("x")])
    run = await runner_for(runners, definition, model, log).start("mcp-internal", "go")
    [unknown] = (await run.idle()).unknown_effects
    assert unknown.request.mcp is not None and unknown.request.mcp.name == "internal"
    assert "-32603" in (unknown.diagnostic or "")
    assert [c["tool"] for c in calls(log)] == ["internal"]


async def test_mcp_arguments_failing_the_recorded_schema_are_rejected_before_any_call(
    runners: list[LocalRunner], log: Path
) -> None:
    definition = Definition("mcp-args", mcp_servers=[McpServer("faulty")])
    model = ScriptedModel(
        [reply.tool_calls(("faulty_add", {"a": "one", "b": 2})), reply.text("ok")]
    )
    run = await runner_for(runners, definition, model, log).start("mcp-args", "go")
    assert (await run.result()).text == "ok"
    [result] = model.requests[1].messages[-1].tool_results
    assert result.is_error and "invalid arguments" in result.content.lower()
    assert calls(log) == []


async def test_mcp_server_dying_mid_call_is_unknown_never_resent_and_restarted_for_the_next(
    runners: list[LocalRunner], log: Path
) -> None:
    definition = Definition("mcp-crash", mcp_servers=[McpServer("faulty")])
    model = ScriptedModel(
        [
            reply.tool_calls(("faulty_crash", {"text": "boom"})),
            reply.tool_calls(("faulty_echo", {"text": "again"})),
            reply.text("recovered"),
        ]
    )
    run = await runner_for(runners, definition, model, log).start("mcp-crash", "go")
    [unknown] = (await run.idle()).unknown_effects
    assert unknown.request.mcp is not None and unknown.request.mcp.name == "crash"
    assert unknown.diagnostic is not None and "unknown" in unknown.diagnostic
    assert [c["tool"] for c in calls(log)] == ["crash"]
    settled = ToolResult(
        call_id=unknown.request.call.id, name="faulty_crash", content="host: it did run"
    )
    await run.resolve(unknown, settle_tool_result(unknown.request, settled, "succeeded"))
    assert (await run.result()).text == "recovered"
    logged = calls(log)
    assert [c["tool"] for c in logged] == ["crash", "echo"]  # crash never sent again
    assert logged[0]["pid"] != logged[1]["pid"]  # a new server process took the next call


async def test_mcp_call_over_its_timeout_is_unknown_and_received_once(
    runners: list[LocalRunner], log: Path
) -> None:
    server = McpServer("faulty", timeout=timedelta(seconds=1))
    definition = Definition("mcp-hang", mcp_servers=[server])
    model = ScriptedModel([reply.tool_calls(("faulty_hang", {"text": "z"})), reply.text("x")])
    run = await runner_for(runners, definition, model, log).start("mcp-hang", "go")
    [unknown] = (await run.idle()).unknown_effects
    assert unknown.request.call.name == "faulty_hang"
    # received once; a "cancelled" note may follow (the SDK's courtesy cancel on timeout)
    assert [c["tool"] for c in calls(log) if c["tool"] != "cancelled"] == ["hang"]


async def test_mcp_result_over_the_payload_limit_is_unknown_with_its_request_kept(
    runners: list[LocalRunner], log: Path
) -> None:
    definition = Definition("mcp-big", mcp_servers=[McpServer("faulty")])
    model = ScriptedModel([reply.tool_calls(("faulty_big", {"size": 300_000})), reply.text("x")])
    runner = runner_for(runners, definition, model, log, payload_limit_bytes=200_000)
    run = await runner.start("mcp-big", "go")
    [unknown] = (await run.idle()).unknown_effects
    assert unknown.request.mcp is not None and unknown.request.mcp.name == "big"
    assert PAYLOAD_TOO_LARGE in (unknown.diagnostic or "") or "too large" in (
        unknown.diagnostic or ""
    )
    assert [c["tool"] for c in calls(log)] == ["big"]


@pytest.mark.parametrize(
    ("variant", "named"),
    [
        ("bad_schema", "'broken'"),
        ("duplicate", "'echo'"),
        ("long_name", "xxxxxxxx"),
        ("huge_description", "'verbose'"),
    ],
)
async def test_mcp_bad_tool_list_is_refused_naming_server_and_tool_and_the_runner_goes_on(
    runners: list[LocalRunner], log: Path, variant: str, named: str
) -> None:
    bad = Definition("mcp-bad", mcp_servers=[McpServer("faulty")])
    model = ScriptedModel([reply.text("never")])
    runner = runner_for(runners, bad, model, log, variant)
    with pytest.raises(ScopeError) as refused:
        await runner.start("mcp-bad", "go")
    assert refused.value.code == MCP_LIST_INVALID
    assert "'faulty'" in refused.value.message and named in refused.value.message
    assert len(refused.value.message) < 1000
    assert model.requests == [] and calls(log) == []
    narrowed = Definition("mcp-narrow", mcp_servers=[McpServer("faulty", allow=("echo",))])
    ok = ScriptedModel([reply.tool_calls(("faulty_echo", {"text": "k"})), reply.text("fine")])
    if variant != "duplicate":  # a duplicate `echo` stays refused under any allow list
        again = runner_for(runners, narrowed, ok, log, variant)
        assert (await (await again.start("mcp-narrow", "go")).result()).text == "fine"


async def test_mcp_allow_list_and_prefix_shape_what_the_model_sees(
    runners: list[LocalRunner], log: Path
) -> None:
    server = McpServer("faulty", allow=("add", "echo"), prefix="calc__")
    definition = Definition("mcp-allow", mcp_servers=[server])
    model = ScriptedModel([reply.tool_calls(("faulty_echo", {"text": "x"})), reply.text("ok")])
    run = await runner_for(runners, definition, model, log).start("mcp-allow", "go")
    await run.result()
    assert [t.name for t in model.requests[0].tools] == ["calc__add", "calc__echo"]
    [result] = model.requests[1].messages[-1].tool_results
    assert result.is_error and "not available" in result.content.lower()
    assert calls(log) == []


async def test_mcp_allow_list_naming_a_tool_the_server_lacks_is_refused(
    runners: list[LocalRunner], log: Path
) -> None:
    definition = Definition("mcp-missing", mcp_servers=[McpServer("faulty", allow=("nope",))])
    runner = runner_for(runners, definition, ScriptedModel([reply.text("x")]), log)
    with pytest.raises(ScopeError, match="'nope'") as refused:
        await runner.start("mcp-missing", "go")
    assert refused.value.code == MCP_LIST_INVALID


async def test_mcp_tool_colliding_with_a_local_tool_after_its_prefix_is_refused(
    runners: list[LocalRunner], log: Path
) -> None:
    @tool(name="faulty_echo", permission="read")
    def clash(text: str) -> str:
        return text

    definition = Definition("mcp-clash", tools=[clash], mcp_servers=[McpServer("faulty")])
    runner = LocalRunner(
        definitions=[definition],
        tools=[clash],
        models={"default": ScriptedModel([reply.text("x")])},
        mcp_servers={"faulty": faulty(log)},
    )
    runners.append(runner)
    with pytest.raises(ScopeError, match="collides") as refused:
        await runner.start("mcp-clash", "go")
    assert refused.value.code == MCP_LIST_INVALID


def test_mcp_server_a_definition_names_must_be_configured_where_it_runs() -> None:
    definition = Definition("mcp-unconfigured", mcp_servers=[McpServer("elsewhere")])
    with pytest.raises(ConfigurationError, match="'elsewhere'"):
        LocalRunner(definitions=[definition], models={"default": ScriptedModel([])})


def test_mcp_servers_enter_the_digest_only_when_declared() -> None:
    plain = Definition("d")
    assert "mcp_servers" not in plain.declaration()
    with_server = Definition("d", mcp_servers=[McpServer("time")])
    assert with_server.declaration()["mcp_servers"][0]["name"] == "time"
    assert with_server.digest != plain.digest
    narrowed = Definition("d", mcp_servers=[McpServer("time", allow=("get_current_time",))])
    assert narrowed.digest != with_server.digest


def test_mcp_server_names_are_checked_when_declared() -> None:
    with pytest.raises(ScopeError, match="name"):
        McpServer("npx -y server")
    with pytest.raises(ScopeError, match="distinct"):
        Definition("d", mcp_servers=[McpServer("a"), McpServer("a")])


async def test_mcp_server_that_cannot_start_fails_the_call_definitely_nothing_sent(
    runners: list[LocalRunner], log: Path
) -> None:
    """Unreachable when listing: the run is refused before any model call."""
    definition = Definition("mcp-down", mcp_servers=[McpServer("faulty")])
    runner = LocalRunner(
        definitions=[definition],
        models={"default": ScriptedModel([reply.text("x")])},
        mcp_servers={"faulty": McpStdio("/nonexistent/mcp-server")},
    )
    runners.append(runner)
    with pytest.raises(ScopeError, match="'faulty'") as refused:
        await runner.start("mcp-down", "go")
    assert refused.value.code == MCP_LIST_FAILED


async def test_mcp_call_needs_the_server_permission_granted_nothing_sent_otherwise(
    runners: list[LocalRunner], log: Path
) -> None:
    definition = Definition(
        "mcp-grant", capabilities={"read"}, mcp_servers=[McpServer("faulty", permission="write")]
    )
    model = ScriptedModel([reply.tool_calls(("faulty_echo", {"text": "x"})), reply.text("ok")])
    run = await runner_for(runners, definition, model, log).start("mcp-grant", "go")
    assert (await run.result()).text == "ok"
    [result] = model.requests[1].messages[-1].tool_results
    assert result.is_error and "not authorized" in result.content.lower()
    assert calls(log) == []


async def test_mcp_over_streamable_http_calls_once_and_a_connection_cut_mid_call_is_unknown(
    runners: list[LocalRunner], log: Path
) -> None:
    """McpHttp with headers; then the server process dies after receiving a call (the
    connection is cut after the request was sent): unknown, received once."""
    import asyncio
    import socket
    import subprocess

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "MCP_CALL_LOG": str(log), "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.mcp_servers.faulty", "--http", str(port)], env=env
    )
    try:
        for _ in range(100):  # until it accepts connections
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                await asyncio.sleep(0.1)
        server_decl = McpServer("faulty", timeout=timedelta(seconds=15))
        definition = Definition("mcp-http", mcp_servers=[server_decl])
        model = ScriptedModel(
            [
                reply.tool_calls(("faulty_echo", {"text": "web"})),
                reply.tool_calls(("faulty_crash", {"text": "cut"})),
                reply.text("ok"),
            ]
        )
        target = McpHttp(f"http://127.0.0.1:{port}/mcp", headers={"Authorization": "Bearer t"})
        runner = LocalRunner(
            definitions=[definition], models={"default": model}, mcp_servers={"faulty": target}
        )
        runners.append(runner)
        run = await runner.start("mcp-http", "go")
        [unknown] = (await run.idle(timeout=30)).unknown_effects
        assert model.requests[1].messages[-1].tool_results[0].content == "web"
        assert unknown.request.mcp is not None and unknown.request.mcp.name == "crash"
        assert [c["tool"] for c in calls(log)] == ["echo", "crash"]
        result = ToolResult(call_id=unknown.request.call.id, name="faulty_crash", content="ran")
        await run.resolve(unknown, settle_tool_result(unknown.request, result, "succeeded"))
        assert (await run.result()).text == "ok"
        assert [c["tool"] for c in calls(log)] == ["echo", "crash"]
    finally:
        server.terminate()
        server.wait(10)


def test_mcp_sdk_loads_only_when_a_connection_opens() -> None:
    """The workflow side, the worker and LocalRunner import no `mcp` module until a
    server is reached (the workflow sandbox never loads it)."""
    import subprocess

    code = (
        "import sys, scope_temporal, scope_temporal.worker, scope_temporal.testing, "
        "scope_temporal.workflows.interaction, scope_temporal.workflows.mcp_listing\n"
        "from scope_temporal import Definition\n"
        "from scope_temporal.mcp import McpServer\n"
        "Definition('d', mcp_servers=[McpServer('time')])\n"
        "loaded = sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.'))\n"
        "assert not loaded, loaded\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


async def test_mcp_calls_fall_under_the_approval_policy_by_permission(
    runners: list[LocalRunner], log: Path
) -> None:
    definition = Definition(
        "mcp-approval",
        approval=ApprovalPolicy.deny_writes(otherwise="deny"),
        mcp_servers=[McpServer("faulty")],  # exec, the default
    )
    model = ScriptedModel([reply.tool_calls(("faulty_echo", {"text": "x"})), reply.text("ok")])
    run = await runner_for(runners, definition, model, log).start("mcp-approval", "go")
    assert (await run.result()).text == "ok"
    [result] = model.requests[1].messages[-1].tool_results
    assert result.is_error
    assert calls(log) == []


async def test_mcp_server_declared_to_approve_destructive_tools_asks_before_those_only(
    runners: list[LocalRunner], log: Path
) -> None:
    definition = Definition(
        "mcp-destructive", mcp_servers=[McpServer("faulty", approval="destructive")]
    )
    model = ScriptedModel(
        [
            reply.tool_calls(("faulty_echo", {"text": "safe"}), ("faulty_add", {"a": 1, "b": 1})),
            reply.text("ok"),
        ]
    )
    run = await runner_for(runners, definition, model, log).start("mcp-destructive", "go")
    snap = await run.idle()
    [pending] = snap.pending_tool_inputs  # `add` has no hints: destructive by MCP's default
    assert pending.kind == "approval" and "faulty_add" in pending.process_id + str(pending.prompt)
    assert [c["tool"] for c in calls(log)] == ["echo"]  # read-only: it did not wait
    await run.answer(pending, "a1", {"decision": "approve", "reason": "fine"})
    assert (await run.result()).text == "ok"
    assert [c["tool"] for c in calls(log)] == ["echo", "add"]


async def test_mcp_cancelling_the_interaction_sends_mcp_cancellation_to_the_running_call(
    runners: list[LocalRunner], log: Path
) -> None:
    import asyncio

    definition = Definition("mcp-cancel", mcp_servers=[McpServer("faulty")])
    model = ScriptedModel([reply.tool_calls(("faulty_hang", {"text": "long"})), reply.text("x")])
    run = await runner_for(runners, definition, model, log).start("mcp-cancel", "go")
    for _ in range(100):
        if calls(log):
            break
        await asyncio.sleep(0.1)
    await run.cancel()
    for _ in range(50):  # the server logs the cancellation it received
        if len(calls(log)) == 2:
            break
        await asyncio.sleep(0.1)
    assert [c["tool"] for c in calls(log)] == ["hang", "cancelled"]


async def test_mcp_sampling_requests_are_refused_with_an_mcp_error(
    runners: list[LocalRunner], log: Path
) -> None:
    """Not allowed (docs/mcp.md, Sampling): no Definition served lets the server sample,
    so the client does not declare it, and a server asking anyway mid-call gets the MCP
    SDK's error; the call itself still settles definitely."""
    definition = Definition("mcp-ask", mcp_servers=[McpServer("faulty")])
    model = ScriptedModel([reply.tool_calls(("faulty_sample", {"text": "hi"})), reply.text("ok")])
    run = await runner_for(runners, definition, model, log).start("mcp-ask", "go")
    assert (await run.result()).text == "ok"
    [sample] = model.requests[1].messages[-1].tool_results
    assert (
        sample.is_error and sample.content == "sample refused by the client: Sampling not supported"
    )
    assert [c["tool"] for c in calls(log)] == ["sample"]

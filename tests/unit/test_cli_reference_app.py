"""The reference app (workflows/ + activities/) exercises the product as the issue asks:
parallel read tools, an approval wait before acting, a delegate, a completion validator, a
deferred tool advertised by another tool; its default model is the offline planner."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from scope_temporal import Definition, Message, OpenAIChatModel, ScriptedModel
from scope_temporal.cli._app import describe_model, load_app, project_root
from scope_temporal.testing import LocalRunner

load_app(None)  # the project root importable: the reference app's own modules
from activities.clock import AVAILABLE  # noqa: E402  (the MCP extra and mcp-server-time)

RUNNERS: list[LocalRunner] = []


def _runner() -> LocalRunner:
    app = load_app(None)
    runner = LocalRunner(
        definitions=app.definitions,
        tools=app.tools,
        models=app.models,
        mcp_servers=app.mcp_servers,
    )
    RUNNERS.append(runner)
    return runner


@pytest.fixture(autouse=True)
async def _close_runners() -> AsyncIterator[None]:
    yield
    while RUNNERS:  # the MCP time server each started
        await RUNNERS.pop().aclose()


def test_the_app_loads_from_the_project_root_with_its_definitions() -> None:
    root = project_root()
    assert root is not None and (root / "workflows" / "ops.py").is_file()
    app = load_app(None)
    assert app.module == "workflows"
    assert [d.name for d in app.definitions] == ["ops", "summarizer"]
    assert sorted(t.name for t in app.tools) == [
        "export_logs",
        "open_ticket",
        "read_runbook",
        "restart_service",
        "search_logs",
    ]
    ops = app.definitions[0]
    assert ops.max_concurrent_tool_calls >= 2
    assert [s.name for s in ops.tools.deferred] == ["open_ticket"]
    assert ops.delegate("summarize") is not None
    assert ops.completion_validator is not None
    assert {s.name: s.permission for s in ops.tools.tools} == {
        "search_logs": "read",
        "read_runbook": "read",
        "restart_service": "exec",
        "export_logs": "write",  # a background tool, declared parallel
        "task_status": "read",  # the task tools come with it
        "task_output": "read",
        "task_cancel": "write",
    }
    export = ops.tools.get("export_logs")
    assert export is not None and export.background is not None
    assert export.background.handoff and export.background.recoverable


def test_the_default_model_is_the_offline_planner_labelled_as_such(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("OPENAI_API_KEY", "SCOPE_MODEL_BASE_URL", "SCOPE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    model = load_app(None).models["default"]
    assert isinstance(model, ScriptedModel)
    assert describe_model(model).startswith("offline rule-based planner (no LLM")


@pytest.mark.parametrize(
    "env",
    [
        {"OPENAI_API_KEY": "sk-test"},
        {"SCOPE_MODEL_BASE_URL": "http://127.0.0.1:9/v1", "SCOPE_MODEL": "llama3.1"},
    ],
)
def test_a_real_model_is_used_when_configured(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "SCOPE_MODEL_BASE_URL", "SCOPE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    import workflows

    model = workflows.build_models()["default"]
    assert isinstance(model, OpenAIChatModel)
    assert describe_model(model).startswith("OpenAI-compatible model")


async def test_the_ops_agent_investigates_asks_approval_delegates_and_is_validated() -> None:
    run = await _runner().start("ops", [Message.user("checkout returns 502 errors")])
    tree = await run.idle()
    first = next(m for m in tree.context if m.role == "assistant")
    clock = ["time_get_current_time"] if AVAILABLE else []  # the MCP server, if installed
    assert [c.name for c in first.tool_calls] == [
        "search_logs",
        "read_runbook",
        "export_logs",
        *clock,
    ]
    assert "open_ticket" in tree.root.advertised_tools  # advertised by read_runbook
    wait = tree.pending_tool_inputs[0]
    assert wait.prompt.startswith("Restart payments-worker?")
    assert wait.response_schema["properties"]["approved"] == {
        "type": "boolean",
        "description": "true to go ahead",
    }

    await run.answer(wait, "approve", {"approved": True, "note": "go"})
    out = await run.result()
    assert out.model_calls == 8
    assert [a.delegate for a in out.artifacts] == ["summarize"]
    assert "export_logs: 4 evidence file(s) in" in out.text  # read back with task_output
    [task] = run.snapshot().tasks
    assert (task.tool, task.status, task.progress.events) == ("export_logs", "completed", 4)
    assert "Root cause: payments-worker v2.3.1 leaks database connections" in out.text
    assert "open_ticket: opened OPS-" in out.text
    if AVAILABLE:  # what mcp-server-time answered, over stdio, through the recorded list
        assert re.search(r"investigated at 20\d\d-\d\d-\d\dT\S+ \(MCP server time\)", out.text)
    users = [m.text for m in run.snapshot().context if m.role == "user"]
    notice, feedback = users[1], users[2]  # the export told the Interaction it had ended
    assert json.loads(notice)["type"] == "task_notification"
    assert feedback.startswith("The report must state the root cause")


async def test_a_declined_restart_and_a_steer_change_the_report() -> None:
    run = await _runner().start("ops", [Message.user("checkout returns 502 errors")])
    wait = (await run.idle()).pending_tool_inputs[0]
    await run.answer(wait, "decline", {"approved": False, "note": "change freeze"})
    out = await run.result()
    assert "failed: the operator declined the restart of payments-worker: change freeze" in out.text

    run = await _runner().start("ops", [Message.user("checkout returns 502 errors")])
    await run.steer("s1", Message.user("do not restart anything"))
    out = await run.result()
    assert "restart_service" not in out.text
    assert "operator said: do not restart anything" in out.text


def test_the_ops_agent_uses_the_mcp_time_server_when_installed_and_runs_without_it() -> None:
    """`mcp-server-time` (the `dev` extra) beside the local tools; without the `mcp` extra
    the app declares no server, so the worker and the demo still run."""
    ops = next(d for d in load_app(None).definitions if d.name == "ops")
    assert isinstance(ops, Definition)
    if AVAILABLE:
        [server] = ops.mcp_servers
        assert (server.name, server.allow, server.permission) == (
            "time",
            ("get_current_time",),
            "read",
        )
        assert set(load_app(None).mcp_servers) == {"time"}
    blocked = (
        "import sys\n"
        "sys.modules['mcp'] = sys.modules['mcp_server_time'] = None  # as if not installed\n"
        "from scope_temporal.cli._app import load_app\n"
        "app = load_app(None)\n"
        "ops = app.definitions[0]\n"
        "print(len(ops.mcp_servers), len(app.mcp_servers), sys.modules['mcp'] is None)\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", blocked], capture_output=True, text=True, check=False, cwd=root
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "0", "True"]

"""`scope-temporal demo --yes`: one command, in a clean environment, from outside the checkout.

Run with `--keep` so that, once it has printed its output, the test can look at the server
it started: the Interaction, its ToolCall children and its delegate, with their summaries.
"""

from __future__ import annotations

import asyncio
import re
import shlex
from pathlib import Path

import pexpect
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus

from activities.clock import AVAILABLE as MCP_TIME  # the reference app's MCP time server
from tests.live.test_cli_dev import CLI, REPO, Proc, clean_env, free_port, port_open, run_cli

pytestmark = pytest.mark.live


async def _children(client: Client, parent: str, expected: int) -> dict[str, str]:
    """Child workflow id -> static summary, once visibility lists `expected` of them."""
    for _ in range(100):
        found = [e async for e in client.list_workflows(f"ParentWorkflowId = '{parent}'")]
        if len(found) >= expected:
            summaries = {}
            for execution in found:
                described = await client.get_workflow_handle(execution.id).describe()
                summaries[execution.id] = await described.static_summary() or ""
            return summaries
        await asyncio.sleep(0.1)
    raise AssertionError(f"{parent} has fewer than {expected} children: {found}")


async def test_demo_yes_runs_the_reference_app_end_to_end(tmp_path: Path) -> None:
    port, ui_port = free_port(), free_port()
    demo = Proc(
        ["demo", "--yes", "--keep", "--address", f"localhost:{port}", "--ui-port", str(ui_port)],
        env=clean_env(tmp_path, PYTHONPATH=str(REPO)),  # this checkout's code
        cwd=tmp_path,
    )
    try:
        demo.wait_for("Press Ctrl-C to stop", timeout=60)
        out = demo.output
        assert "model default: offline rule-based planner (no LLM" in out
        assert f"starting a Temporal dev server at localhost:{port}" in out
        root = demo.wait_for(r"started (ops-demo-[0-9a-f]+);").group(1)
        url = f"http://localhost:{ui_port}/namespaces/default/workflows/{root}"
        assert f"See it in the Temporal UI: {url}" in out
        for step in (
            'model #1 → search_logs(query="ERROR"), read_runbook(',
            "⇢ export_logs continues in the background",
            "⋯ export_logs running · task ",  # its progress, live
            "progress event(s): exported ",
            "✓ export_logs completed · task ",
            "? restart_service asks: Restart payments-worker?",
            'answered {"approved": true, "note": "auto-approved by --yes"} (--yes)',
            "(delegate) succeeded",
            "✓ open_ticket(",
            "completion validator sent the reply back",
            "Root cause: payments-worker v2.3.1 leaks database connections",
            "(Written by the offline rule-based planner: no LLM was called.",
            f"artifact: summarize ({root}/delegate/3/0)",
            *(["(MCP server time)"] if MCP_TIME else []),  # mcp-server-time, over stdio
        ):
            assert step in out, f"{step!r} missing from the demo output:\n{out}"

        client = await Client.connect(f"localhost:{port}")
        described = await client.get_workflow_handle(root).describe()
        assert described.status == WorkflowExecutionStatus.COMPLETED
        assert described.workflow_type == "scope.Interaction"
        assert (await described.static_summary() or "").startswith(
            "ops: checkout is returning 502 errors"
        )
        # every tool call is a ToolCall workflow (the default mapping), the delegate an
        # Interaction of its own; the export that moved to the background started a
        # BackgroundTask from its ToolCall workflow
        clock = [f"{root}/tool/1/3"] if MCP_TIME else []  # time_get_current_time
        children = await _children(client, root, expected=9 + len(clock))
        assert sorted(children) == sorted(
            [
                *(f"{root}/tool/{seq}/{i}" for seq, i in ((1, 0), (1, 1), (1, 2), (2, 0), (2, 1))),
                *clock,
                f"{root}/delegate/3/0",
                *(f"{root}/tool/{seq}/0" for seq in (4, 5, 6)),
            ]
        )
        assert children[f"{root}/delegate/3/0"] == "delegate summarize -> summarizer"
        assert children[f"{root}/tool/1/0"] == 'tool search_logs(query="ERROR")'
        assert children[f"{root}/tool/4/0"].startswith(
            'tool restart_service(name="payments-worker"'
        )
        assert children[f"{root}/tool/5/0"].startswith("tool open_ticket(")
        assert children[f"{root}/tool/6/0"].startswith("tool task_output(")
        activities = [
            e.user_metadata.summary.data.decode()
            async for e in client.get_workflow_handle(root).fetch_history_events()
            if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        ]
        assert sum(a.startswith('"model #') for a in activities) == 8
        assert not any(a.startswith('"tool ') for a in activities)
        task = await client.get_workflow_handle(f"{root}/task/1/2").describe()
        assert task.workflow_type == "scope.BackgroundTask"
        assert task.status == WorkflowExecutionStatus.COMPLETED
        tool_call = await client.get_workflow_handle(f"{root}/tool/4/0").describe()
        assert tool_call.workflow_type == "scope.ToolCall"
        delegate = await client.get_workflow_handle(f"{root}/delegate/3/0").describe()
        assert delegate.workflow_type == "scope.Interaction"
        assert delegate.status == WorkflowExecutionStatus.COMPLETED

        hint = demo.wait_for(r"^\s+(scope-temporal inspect .*)$").group(1)
        assert hint == f"scope-temporal inspect {root} --address localhost:{port}"
        tree = run_cli(
            shlex.split(hint)[1:], env=clean_env(tmp_path, PYTHONPATH=str(REPO)), cwd=tmp_path
        )
        assert tree.returncode == 0, tree.stdout + tree.stderr
        assert tree.stdout.startswith(f"{root} · ops · completed · 8 model call(s)")
        assert f"✓ export_logs completed · task {root}/task/1/2 · attempt 1" in tree.stdout

        assert demo.stop() == 0
        assert not port_open(port), "the embedded server stops with the demo"
        assert not port_open(ui_port)
    finally:
        demo.kill()


def test_demo_asks_for_the_approval_at_the_terminal(tmp_path: Path) -> None:
    port, ui_port = free_port(), free_port()
    child = pexpect.spawn(
        CLI,
        ["demo", "--address", f"localhost:{port}", "--ui-port", str(ui_port)],
        env=clean_env(tmp_path, PYTHONPATH=str(REPO)),
        cwd=str(tmp_path),
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 200),
    )
    try:
        child.expect(r"restart_service asks: Restart payments-worker\?")
        child.expect(re.escape("(or just y / n)"))
        child.expect("answer> ")
        child.sendline("perhaps")
        child.expect(r"✗ not JSON")
        child.expect("answer> ")
        child.sendline("y")
        child.expect("answer sent")
        child.expect("Root cause: payments-worker")
        child.expect(
            rf"See it in the Temporal UI: http://localhost:{ui_port}/namespaces/"
            r"default/workflows/ops-demo-[0-9a-f]+"
        )
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert not port_open(port), "without --keep the demo stops its server"

"""Security of authority, live: a process only ever uses what its Definition grants.

- a tool child and a delegate run with the grant the Definition (and the delegate
  binding) gives, never more: an unauthorised call is a model-visible rejection whose
  body never runs, and the grant travelling in each ToolCall's input is the narrowed one;
- a `scope.ToolCall` started by hand with a forged request (a wider grant, a tool its
  Definition does not bind, a Definition that does not exist) runs nothing, and neither
  does one of a tool the approval policy covers with no approval decision on record;
- a worker refuses a tool registered with another permission than its Definition
  declares (a tool declared read cannot run as exec);
- an answer addressed to another workflow's wait is refused
  (`test_hostile_inputs.py`: "answer: another workflow's wait", and the client check);
- an API key echoed back by a provider never reaches history (every history of the
  session is scanned for the fault workers' key in tests/live/test_zz_replay.py).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    ApprovalPolicy,
    Definition,
    DefinitionError,
    Delegate,
    Message,
    OpenAIChatModel,
    ScopeWorker,
    ScriptedModel,
    current_tool_call,
    reply,
    tool,
)
from scope_temporal.converter import read_recorded
from scope_temporal.interaction.effects import ToolEffectRequest
from scope_temporal.names import TOOL_CALL_WORKFLOW
from scope_temporal.payloads import ToolCallInput
from tests.faults.scenario import SECRET
from tests.live.harness import eventually, fresh_id, serving

RAN: Counter[str] = Counter()


@tool(permission="read")
def peek(what: str) -> str:
    """Read something."""
    RAN[f"peek:{current_tool_call().process_id}"] += 1
    return f"peeked {what}"


@tool(permission="exec")
def wipe(disk: str) -> str:
    """Wipe a disk."""
    RAN[f"wipe:{current_tool_call().process_id}"] += 1
    return f"wiped {disk}"


def _plan(request: Any) -> Any:
    first = request.messages[0].text
    done = [r for m in request.messages if m.role == "tool" for r in m.tool_results]
    if done:
        return reply.text(" | ".join(r.content for r in done))
    if first.startswith("child"):
        return reply.tool_calls(("peek", {"what": "a"}), ("wipe", {"disk": "sda"}))
    return reply.tool_calls(("wipe", {"disk": "sdb"}), ("helper", {"task": "child: look"}))


READ_ONLY = Definition(
    "authority-root",
    tools=[peek, wipe],
    delegates=[Delegate("helper", "Helps", definition="authority-child", capabilities={"read"})],
    capabilities={"read", "write"},
    max_concurrent_tool_calls=2,
    tool_call_workflows="always",  # every call a ToolCall workflow, to read their inputs
)
CHILD = Definition("authority-child", tools=[peek, wipe], tool_call_workflows="always")


async def test_tool_children_and_delegates_hold_only_what_is_granted(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel(_plan)
    async with serving(
        temporal_env, [READ_ONLY, CHILD], tools=[peek, wipe], models={"default": model}
    ) as scope:
        handle = await scope.start("authority-root", [Message.user("root")], id=fresh_id("auth"))
        out = await asyncio.wait_for(handle.result(), 30)
        root = handle.id
        delegate = f"{root}/delegate/1/1"
        # the grant the delegate's tool call carried: the narrowed one
        granted = (await _started(scope.client, f"{delegate}/tool/1/0")).request.granted
    assert "'wipe' is not authorized" in out.text and "'exec'" in out.text
    # the root's wipe, and the delegate's (reported inside the delegate's reply)
    assert out.text.count("'wipe' is not authorized") == 2
    assert "peeked a" in out.text
    assert granted == ("read",)
    assert not [k for k in RAN if k.startswith(f"wipe:{root}")]  # no body ran


async def _started(client: Client, workflow_id: str) -> ToolCallInput:
    """The input a ToolCall workflow started with, as recorded in its history."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    start = history.events[0].workflow_execution_started_event_attributes
    return read_recorded(start.input.payloads[0], ToolCallInput, workflow_id)


def _forged(request: ToolEffectRequest, **changes: Any) -> ToolCallInput:
    from datetime import timedelta

    return ToolCallInput(
        request=request.model_copy(update=changes), start_to_close=timedelta(seconds=30)
    )


async def test_a_forged_tool_call_start_runs_nothing(temporal_env: WorkflowEnvironment) -> None:
    model = ScriptedModel([reply.tool_calls(("peek", {"what": "x"})), reply.text("ok")])
    async with serving(
        temporal_env, [READ_ONLY, CHILD], tools=[peek, wipe], models={"default": model}
    ) as scope:
        handle = await scope.start("authority-root", [Message.user("root")], id=fresh_id("auth"))
        await asyncio.wait_for(handle.result(), 30)
        genuine = (await _started(scope.client, f"{handle.id}/tool/1/0")).request
        wipe_call = genuine.call.model_copy(update={"name": "wipe", "arguments": '{"disk": "sda"}'})
        forgeries = {
            "wider grant": _forged(genuine, call=wipe_call, granted=("exec", "read", "write")),
            "unbound tool": _forged(
                genuine, call=genuine.call.model_copy(update={"name": "format_all"})
            ),
            "no such Definition": _forged(
                genuine, call=wipe_call, definition="root-of-all", granted=("exec",)
            ),
        }
        for name, forged in forgeries.items():
            workflow_id = f"{handle.id}/forged/{name.replace(' ', '-')}"
            child = await scope.client.start_workflow(
                TOOL_CALL_WORKFLOW,
                forged.model_copy(
                    update={
                        "request": forged.request.model_copy(update={"process_id": workflow_id})
                    }
                ),
                id=workflow_id,
                task_queue=scope.task_queue,
            )
            settled = await asyncio.wait_for(child.result(), 30)
            assert settled["outcome"]["kind"] == "rejected", (name, settled)
            assert settled["outcome"]["code"] == "tool.not_authorized", (name, settled)
    assert not [k for k in RAN if k.startswith(f"wipe:{handle.id}/forged")]
    assert not [k for k in RAN if "format_all" in k]


GUARDED = Definition(
    "authority-approvals",
    tools=[peek, wipe],
    capabilities={"read", "exec"},
    approval=ApprovalPolicy.deny_writes(),  # wipe (exec) needs an approval decision
    tool_call_workflows="always",
)


async def test_seam_08_a_hand_started_call_without_an_approval_decision_runs_nothing(
    temporal_env: WorkflowEnvironment,
) -> None:
    model = ScriptedModel([reply.tool_calls(("peek", {"what": "x"})), reply.text("ok")])
    async with serving(temporal_env, [GUARDED], tools=[peek, wipe], models={"default": model}) as (
        scope
    ):
        handle = await scope.start("authority-approvals", [Message.user("go")], id=fresh_id("ap"))
        await asyncio.wait_for(handle.result(), 30)
        genuine = (await _started(scope.client, f"{handle.id}/tool/1/0")).request
        # the grant, the digest and the binding all hold: only the approval is missing
        workflow_id = f"{handle.id}/forged/no-approval"
        wipe_call = genuine.call.model_copy(update={"name": "wipe", "arguments": '{"disk": "sda"}'})
        forged = _forged(genuine, call=wipe_call, process_id=workflow_id)
        assert forged.approval is None and forged.decision is None
        child = await scope.client.start_workflow(
            TOOL_CALL_WORKFLOW, forged, id=workflow_id, task_queue=scope.task_queue
        )
        settled = await asyncio.wait_for(child.result(), 30)
    assert settled["outcome"]["kind"] == "rejected", settled
    assert settled["outcome"]["code"] == "tool.not_authorized", settled
    assert "needs approval" in settled["outcome"]["result"]["content"]
    assert not [k for k in RAN if k.startswith(f"wipe:{handle.id}/forged")]  # never ran


def test_a_tool_registered_with_another_permission_than_declared_is_refused(
    temporal_env: WorkflowEnvironment,
) -> None:
    @tool(name="peek", permission="exec")
    def peek_exec(what: str) -> str:
        """Same name, more power."""
        return what

    with pytest.raises(DefinitionError) as refused:
        ScopeWorker(
            temporal_env.client,
            task_queue="never-started",
            definitions=[CHILD],
            tools=[peek_exec, wipe],
            models={"default": ScriptedModel([])},
        )
    assert "'peek'" in refused.value.message and "read" in refused.value.message


class _EchoKey(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint that refuses the key and echoes it back."""

    def do_POST(self) -> None:
        key = self.headers.get("Authorization", "")
        body = json.dumps({"error": {"message": f"Invalid API key: {key}"}}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def echoing_provider() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _EchoKey)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()


async def test_an_api_key_echoed_by_the_provider_never_reaches_history(
    temporal_env: WorkflowEnvironment,
) -> None:
    with echoing_provider() as base_url:
        model = OpenAIChatModel("gpt-test", base_url=base_url, api_key=SECRET)
        async with serving(
            temporal_env, [Definition("echoed-key")], models={"default": model}
        ) as scope:
            handle = await scope.start("echoed-key", [Message.user("hi")], id=fresh_id("key"))
            snap = await eventually(handle.snapshot, lambda s: s.status == "failed")
            history = await scope.client.get_workflow_handle(handle.id).fetch_history()
    # a 401 proves the model did not run: a definite failure, the provider's words masked
    failure = snap.failure
    assert failure is not None and failure.code == "interaction.model.rejected"
    assert "401" in failure.message and "***" in failure.message
    assert SECRET not in failure.message
    raw = b"".join(event.SerializeToString() for event in history.events)
    assert SECRET.encode() not in raw
    assert b"Invalid API key: Bearer ***" in raw  # what the provider said did reach it

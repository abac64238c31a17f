"""Re-record the checked-in histories (run by hand after an intended change):

python -m tests.histories.record
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    Message,
    ScopeClient,
    ScopeWorker,
    ScriptedModel,
    ToolResult,
    reply,
    settle_tool_result,
)
from scope_temporal.names import SEARCH_ATTRIBUTES
from scope_temporal.testing.devserver import DEV_SERVER_ARGS, temporal_cli_path
from tests.histories.agents import DEFINITIONS, TOOLS

HERE = Path(__file__).parent


async def record_run(env: WorkflowEnvironment, name: str) -> None:
    """One run of Definition `name` (its id is the name): a parallel read and an approval,
    a steer, then a call whose outcome is unknown until the host settles it."""
    model = ScriptedModel(
        [
            reply.tool_calls(("read_status", {"service": "web"}), ("restart", {"service": "web"})),
            reply.tool_calls(("notify", {"channel": "#ops"})),
            reply.text("web restarted, #ops notified"),
        ]
    )
    async with ScopeWorker(
        env.client,
        task_queue=name,
        definitions=DEFINITIONS,
        tools=TOOLS,
        models={"default": model},
    ):
        scope = ScopeClient(env.client, task_queue=name)
        handle = await scope.start(name, [Message.user("web is slow")], id=name)
        await handle.steer("s1", Message.user("be careful"))
        while True:
            snap = await handle.snapshot()
            for pending in snap.pending_tool_inputs:
                await handle.answer(pending, "a1", {"ok": True})
            for unknown in snap.unknown_effects:
                call = unknown.request.call
                result = ToolResult(call_id=call.id, name=call.name, content="sent (checked)")
                await handle.resolve(
                    unknown, settle_tool_result(unknown.request, result, "succeeded")
                )
            if snap.status == "completed":
                break
            await asyncio.sleep(0.2)
        await handle.result()
    await asyncio.sleep(2)  # let visibility catch up before listing the children
    children = [
        e.id
        async for e in env.client.list_workflows(
            f"WorkflowType = 'scope.ToolCall' AND RootWorkflowId = '{name}'"
        )
    ]
    for workflow_id in [name, *sorted(children)]:
        history = await env.client.get_workflow_handle(workflow_id).fetch_history()
        file_name = workflow_id.replace("/", "_") + ".json"
        (HERE / file_name).write_text(history.to_json())
        print("recorded", file_name)


async def record() -> None:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_cli_path(),
        dev_server_extra_args=list(DEV_SERVER_ARGS),
        search_attributes=SEARCH_ATTRIBUTES,
    )
    try:
        for definition in DEFINITIONS:
            await record_run(env, definition.name)
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(record())

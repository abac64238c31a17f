"""Re-record the checked-in histories (run by hand after an intended change):

python -m tests.histories.record            # every run
python -m tests.histories.record NAME ...   # only these runs (e.g. after adding one)
python -m tests.histories.record --into DIR # into another folder (e.g. wire-context/)

Each run's id is its Definition's name; every workflow of its tree is written, one file
per run (`<workflow id with / as _>.json`, and `..._run<k>.json` for the earlier runs of
a workflow that continued-as-new).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    InteractionHandle,
    Message,
    ModelRequest,
    ModelUnavailable,
    Response,
    ScopeClient,
    ScopeWorker,
    ScriptedModel,
    ToolResult,
    TreeSnapshot,
    UnknownEffect,
    Usage,
    reply,
    settle_model_result,
    settle_tool_result,
)
from scope_temporal.names import SEARCH_ATTRIBUTES
from scope_temporal.testing.devserver import DEV_SERVER_ARGS, temporal_cli_path
from tests.histories.agents import DEFINITIONS, TOOLS

HERE = Path(__file__).parent


def _first_runs() -> ScriptedModel:
    """The two original runs: a parallel read and an approval, then an unknown notify."""
    return ScriptedModel(
        [
            reply.tool_calls(("read_status", {"service": "web"}), ("restart", {"service": "web"})),
            reply.tool_calls(("notify", {"channel": "#ops"})),
            reply.text("web restarted, #ops notified"),
        ]
    )


def _delegating(request: ModelRequest) -> Response:
    done = [r.content for m in request.messages if m.role == "tool" for r in m.tool_results]
    if request.messages[0].text.startswith("Summarise"):
        return (
            reply.text(f"summary: {done[0]}")
            if done
            else reply.tool_calls(("read_status", {"service": "db"}))
        )
    if not done:
        return reply.tool_calls(
            ("summarize", {"task": "Summarise the db"}), ("read_status", {"service": "web"})
        )
    return reply.text(" / ".join(done))


def _steered(request: ModelRequest) -> Response:
    if request.model_call_seq == 1:
        return reply.tool_calls(
            ("read_status", {"service": "web"}), ("restart", {"service": "web"})
        )
    return reply.text(f"done; last user message: {request.messages[-1].text}")


def _three_calls(request: ModelRequest) -> Response:
    if request.model_call_seq < 3:
        return reply.tool_calls(("read_status", {"service": f"s{request.model_call_seq}"}))
    return reply.text("all read")


@dataclass
class Run:
    model: Callable[[], ScriptedModel]
    continue_as_new_every: int | None = None
    steer_at_wait: bool = False
    """Steer when the approval wait shows (the batch is running), else right at the start."""
    resend_model: bool = False
    """Send an unknown model call again (`retry_model_call`) instead of settling it."""


def _approvals() -> ScriptedModel:
    """Denied by a person; approved and remembered (then the tool's own question);
    approved by the remembered answer; denied by the approver at admission."""
    return ScriptedModel(
        [
            reply.tool_calls(
                ("read_status", {"service": "web"}),
                ("restart", {"service": "web"}),
                ("notify", {"channel": "#all"}),
            ),
            reply.tool_calls(("restart", {"service": "web"})),
            reply.tool_calls(("restart", {"service": "db"})),
            reply.text("web and db restarted"),
        ]
    )


APPROVAL_ANSWERS: list[dict[str, Any]] = [
    {"decision": "deny", "reason": "not before the backup"},
    {"decision": "approve", "reason": "backup done", "remember": True},
]
"""What the host answers the approval waits of `_approvals`, in order."""

RUNS: dict[str, Run] = {
    "recorded": Run(_first_runs),
    "recorded-on-demand": Run(_first_runs),
    "recorded-delegates": Run(lambda: ScriptedModel(_delegating)),
    "recorded-steer-batch": Run(lambda: ScriptedModel(_steered), steer_at_wait=True),
    "recorded-continue-as-new": Run(lambda: ScriptedModel(_three_calls), continue_as_new_every=1),
    "recorded-model-unknown": Run(
        lambda: ScriptedModel(
            [TimeoutError("provider connection reset"), reply.text("answered after the steer")]
        )
    ),
    "recorded-approvals": Run(_approvals),
    "recorded-approvals-on-demand": Run(_approvals),
    "recorded-model-retry": Run(
        lambda: ScriptedModel(
            [
                ModelUnavailable(
                    "Rate limit reached", status=429, retry_after=timedelta(seconds=1)
                ),
                TimeoutError("provider connection reset"),
                reply.text("answered on the third attempt").model_copy(
                    update={"usage": Usage(input_tokens=12, output_tokens=5)}
                ),
                reply.text("answered after the steer"),  # if the steer came after call #1
            ]
        ),
        resend_model=True,
    ),
}


async def _host(handle: InteractionHandle, run: Run) -> None:
    """Follow the tree's events (so the histories hold the stream's polls and the
    children's batches): answer input waits (approval waits from `APPROVAL_ANSWERS`, in
    order), steer once, settle unknowns (tool: sent; model: a text reply, or sent again
    with `resend_model`)."""
    steered = False
    approvals = 0
    if not run.steer_at_wait:
        await handle.steer("s1", Message.user("be careful"))
        steered = True
    async for event in handle.events():
        if event.kind == "wait_opened":
            if not steered:
                await handle.steer("s1", Message.user("be careful"))
                steered = True
            if event.wait.kind == "approval":
                await handle.answer(event.wait, "approval", APPROVAL_ANSWERS[approvals])
                approvals += 1
            else:
                await handle.answer(event.wait, "a1", {"ok": True})
        elif event.kind == "unknown_opened":
            snap: TreeSnapshot = await handle.snapshot()
            for unknown in snap.unknown_effects:
                if unknown.effect_id == event.effect_id:
                    await _settle(handle, unknown, run)


async def _settle(handle: InteractionHandle, unknown: UnknownEffect, run: Run) -> None:
    request = unknown.request
    if request.kind == "tool":
        call = request.call
        result = ToolResult(call_id=call.id, name=call.name, content="sent (checked)")
        await handle.resolve(unknown, settle_tool_result(request, result, "succeeded"))
    elif run.resend_model:
        await handle.retry_model_call(unknown)
    else:
        response = reply.text("recovered from the provider's log")
        await handle.resolve(unknown, settle_model_result(request, response, request.messages))


async def record_run(env: WorkflowEnvironment, name: str, into: Path) -> None:
    run = RUNS[name]
    async with ScopeWorker(
        env.client,
        task_queue=name,
        definitions=DEFINITIONS,
        tools=TOOLS,
        models={"default": run.model()},
    ):
        scope = ScopeClient(env.client, task_queue=name)
        handle = await scope.start(
            name,
            [Message.user("web is slow")],
            id=name,
            continue_as_new_every=run.continue_as_new_every,
        )
        await _host(handle, run)
        await handle.result()
    await _write_tree(env, name, into)


def _chatty(request: ModelRequest) -> Response:
    last = request.messages[-1]
    if last.role == "user" and last.text.startswith("status"):
        return reply.tool_calls(("read_status", {"service": last.text.split()[-1]}))
    return reply.text(f"{len(request.messages)} messages so far")


SESSIONS = ("recorded-session",)
"""Sessions recorded (a `scope.Session` and its turns)."""


async def record_session(env: WorkflowEnvironment, name: str, into: Path) -> None:
    """Three turns (a reply, a tool round, a reply), continue-as-new every 2 turns, end."""
    async with ScopeWorker(
        env.client,
        task_queue=name,
        definitions=DEFINITIONS,
        tools=TOOLS,
        models={"default": ScriptedModel(_chatty)},
    ):
        scope = ScopeClient(env.client, task_queue=name)
        session = scope.session(name, id=name, context={"user": "ada"}, continue_as_new_every=2)
        for n, text in enumerate(["hello", "status of web", "thanks"]):
            await (await session.send(text, message_id=f"m{n}")).result()
        await session.end("recorded")
    await _write_tree(env, name, into)


async def _write_tree(env: WorkflowEnvironment, name: str, into: Path) -> None:
    """Write every run of the workflow `name` and of its tree into the folder `into`."""
    await asyncio.sleep(2)  # let visibility catch up before listing the tree
    executions = [
        e
        async for e in env.client.list_workflows(
            f"WorkflowId = '{name}' OR RootWorkflowId = '{name}'"
        )
    ]
    runs_of: dict[str, list[str]] = {}
    for execution in sorted(executions, key=lambda e: e.start_time):
        runs_of.setdefault(execution.id, []).append(execution.run_id)
    for workflow_id, run_ids in sorted(runs_of.items()):
        for index, run_id in enumerate(run_ids):
            history = await env.client.get_workflow_handle(
                workflow_id, run_id=run_id
            ).fetch_history()
            stem = workflow_id.replace("/", "_")
            suffix = "" if index == len(run_ids) - 1 else f"_run{index + 1}"
            (into / f"{stem}{suffix}.json").write_text(history.to_json())
            print("recorded", f"{stem}{suffix}.json")


async def record(names: list[str], into: Path = HERE) -> None:
    into.mkdir(parents=True, exist_ok=True)
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_cli_path(),
        dev_server_extra_args=list(DEV_SERVER_ARGS),
        search_attributes=SEARCH_ATTRIBUTES,
    )
    try:
        for name in names or [*RUNS, *SESSIONS]:
            await (record_session if name in SESSIONS else record_run)(env, name, into)
    finally:
        await env.shutdown()


def main(argv: list[str]) -> int:
    """`[--into DIR] [NAME ...]`: record the runs named (every run) into DIR (here)."""
    into = HERE
    if argv[:1] == ["--into"] and len(argv) >= 2:
        into, argv = Path(argv[1]), argv[2:]
    asyncio.run(record(argv, into))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

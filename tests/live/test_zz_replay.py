"""CONFORMANCE 42: every history the live suite produced replays without non-determinism.

Runs last among the live tests (file order; tests/faults runs before tests/live), once
per stream of the run (tests/conftest.py: under xdist each stream is one process with its
own dev server; alone, one stream). It replays every workflow in its stream's dev server:
roots, ToolCall children, delegates, background tasks and sessions alike, including the
runs whose workers were SIGKILLed mid-task. It also scans each history for the fake API
key the fault-injection workers hold (and the live model-error tests' endpoints echo in
their error bodies): none may contain it, and where an endpoint echoed it, the history
holds it masked.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from pydantic import BaseModel
from temporalio.client import WorkflowHistory
from temporalio.converter import DataConverter, StorageDriver
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import WorkflowReplayResult

from scope_temporal import (
    Definition,
    Message,
    RunHandle,
    RunProgress,
    ScriptedModel,
    TaskRun,
    background_tool,
    reply,
    tool,
)
from scope_temporal.names import (
    INTERACTION_WORKFLOW,
    SESSION_WORKFLOW,
    TASK_WORKFLOW,
    TOOL_CALL_WORKFLOW,
)
from scope_temporal.payload_limits import DEFAULT_PAYLOAD_LIMIT_BYTES
from scope_temporal.testing.replay import history_task_queue, replay_history
from tests.conftest import STREAMS
from tests.faults import figures, scenario
from tests.live import loss_worker, mcp_worker, task_loss_worker
from tests.live.harness import (
    CHECKED_BY_THEIR_TEST,
    CONVERTER_BY_QUEUE,
    DIVERGED_IDS,
    ECHOED_KEY_QUEUES,
    MODE_BY_QUEUE,
    REGISTRY_BY_QUEUE,
    STORAGE_BY_QUEUE,
    eventually,
    fresh_id,
    in_mode,
    serving,
)
from tests.live.test_readme import readme_block


@tool(permission="read")
def echo(text: str) -> str:
    """Echo."""
    return text


class LaterArgs(BaseModel):
    text: str


class Later:
    """Echo, in the background."""

    async def start(self, task_id: str, arguments: LaterArgs, attempt: int) -> RunHandle:
        async def work(progress: RunProgress) -> str:
            progress.publish("echo", data=arguments.text)
            return arguments.text

        return TaskRun(work)


later = background_tool(permission="read")(Later)


def readme_definitions() -> list[Definition]:
    """The Definition the README's program declares (its code, minus the run at the end)."""
    code = readme_block("## Use it from your app").replace("asyncio.run(main())", "")
    namespace: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), namespace)
    support = namespace["support"]
    assert isinstance(support, Definition)
    return [support]


async def replay_with_deadline(
    history: WorkflowHistory,
    definitions: list[Definition],
    payload_limit: int,
    storage: StorageDriver | None,
    data_converter: DataConverter | None,
) -> WorkflowReplayResult | None:
    """Replay with a deadline; one retry on a fresh Replayer (the SDK's replayer has
    occasionally stalled here on a history with a timed-out workflow task)."""
    for _ in range(2):
        try:
            return await asyncio.wait_for(
                replay_history(
                    history,
                    definitions,
                    payload_limit_bytes=payload_limit,
                    storage=storage,
                    data_converter=data_converter,
                ),
                30,
            )
        except TimeoutError:
            continue
    return None


FAILED_HISTORIES = Path(tempfile.gettempdir()) / "scope-temporal-replay-failures"
REPLAYED_TYPES = (INTERACTION_WORKFLOW, TOOL_CALL_WORKFLOW, TASK_WORKFLOW, SESSION_WORKFLOW)
"""Where a history that did not replay is written, to study it after the run."""


@pytest.mark.parametrize("stream", range(STREAMS))
async def test_c42_every_history_of_the_suite_replays(
    temporal_env: WorkflowEnvironment, stream: int
) -> None:
    # Make sure at least one full tool round with a ToolCall workflow, and one background
    # task, exist even when this file runs alone.
    first = reply.tool_calls(
        ("echo", {"text": "hi"}), ("later", {"text": "hi", "run_in_background": True})
    )
    # "bye" to the task's notification too, should it arrive during the last model call
    model = ScriptedModel(lambda r: first if len(r.messages) == 1 else reply.text("bye"))
    async with serving(
        temporal_env,
        [Definition("replay-me", tools=[echo, later], tool_call_workflows="always")],
        tools=[echo, later],
        models={"default": model},
    ) as scope:
        handle = await scope.start("replay-me", [Message.user("go")])
        await handle.result()
        await eventually(handle.snapshot, lambda s: [t.status for t in s.tasks] == ["completed"])
        # and a session with one turn, ended
        session = scope.session("replay-me", id=fresh_id("replay-chat"))
        await (await session.send("go", message_id="m1")).result()
        await session.end()

    async def visible() -> list[str]:
        return [e.id async for e in temporal_env.client.list_workflows()]

    await eventually(visible, lambda ids: f"{handle.id}/tool/1/0" in ids)

    client = temporal_env.client
    failures: dict[str, str] = {}
    replayed: Counter[str] = Counter()
    scanned = 0
    leaked: list[str] = []  # histories holding the API key the fault workers are given
    steered_runs = 0  # the scan's positive control: a text every fault run does carry
    masked_echoes = 0  # and the masked key, where a model endpoint echoed the key
    async for execution in client.list_workflows():
        if execution.id.split("/")[0] in DIVERGED_IDS | CHECKED_BY_THEIR_TEST:
            continue
        if execution.workflow_type not in REPLAYED_TYPES:
            continue  # e.g. a placeholder a test started to block a child id
        history = await client.get_workflow_handle(
            execution.id, run_id=execution.run_id
        ).fetch_history()
        scanned += 1
        raw = b"".join(event.SerializeToString() for event in history.events)
        if scenario.SECRET.encode() in raw:
            leaked.append(execution.id)
        steered_runs += scenario.STEER_TEXT.encode() in raw
        queue = history_task_queue(history)
        if queue in ECHOED_KEY_QUEUES:
            masked_echoes += b"Incorrect API key provided: ***" in raw
        served = REGISTRY_BY_QUEUE.get(queue)
        definitions = list(served.definitions) if served is not None else []
        payload_limit = served.payload_limit if served is not None else DEFAULT_PAYLOAD_LIMIT_BYTES
        if queue.startswith("loss-"):  # served by a subprocess worker
            definitions = [
                in_mode(d, MODE_BY_QUEUE.get(queue, "on_demand")) for d in loss_worker.DEFINITIONS
            ]
        elif queue.startswith(("mcp-loss-", "mcp-retry-", "mcp-bgloss-")):  # MCP worker loss
            served_definition = mcp_worker.definition(
                queue.startswith("mcp-retry-"), background=queue.startswith("mcp-bgloss-")
            )
            definitions = [in_mode(served_definition, MODE_BY_QUEUE.get(queue, "always"))]
        elif queue.startswith("taskloss-"):  # the background worker-loss subprocesses
            definitions = task_loss_worker.DEFINITIONS
        elif queue.startswith(("fault-", "fleet-")):  # fault-injection worker processes
            definitions = [
                in_mode(d, MODE_BY_QUEUE.get(queue, "always"))
                for d in scenario.definitions_for(queue)
            ]
        elif queue == "readme":  # served by the README program, in a subprocess
            definitions = readme_definitions()
        result = await replay_with_deadline(
            history,
            definitions,
            payload_limit,
            STORAGE_BY_QUEUE.get(queue),
            CONVERTER_BY_QUEUE.get(queue),
        )
        if result is None:
            failures[execution.id] = "replay did not finish in 2 x 30 s"
            continue
        replayed[execution.workflow_type] += 1
        if result.replay_failure is not None:
            kept = FAILED_HISTORIES / f"{execution.id.replace('/', '_')}.json"
            FAILED_HISTORIES.mkdir(parents=True, exist_ok=True)
            kept.write_text(history.to_json())
            failures[execution.id] = f"{result.replay_failure!r} (history kept in {kept})"
    assert replayed[INTERACTION_WORKFLOW] >= 1 and replayed[TOOL_CALL_WORKFLOW] >= 1
    assert replayed[TASK_WORKFLOW] >= 1 and replayed[SESSION_WORKFLOW] >= 1
    assert failures == {}
    assert leaked == [], "an API key reached workflow history"
    if any(queue.startswith(("fault-", "fleet-")) for queue in MODE_BY_QUEUE):
        assert steered_runs > 0, "the scan must find what histories do hold"
    if ECHOED_KEY_QUEUES:
        assert masked_echoes > 0, "the scan must see the key masked where it was echoed"
    figures.FIGURES["histories_scanned_for_secrets"] = scanned
    figures.FIGURES["histories_replayed"] = sum(replayed.values())

"""Issue 25 defect 12 live: a worker that drops runs from its cache (eviction) ends
nothing. With a cache of one workflow, every workflow task of one run evicts another
(mid-run, mid-tool-call, mid-session); each run replays where it was on its next task and
completes, and no cleanup of an evicted run escapes as an exception ignored or logged."""

from __future__ import annotations

import asyncio
import gc
import logging
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from temporalio.testing import WorkflowEnvironment
from temporalio.worker._workflow_instance import _WorkflowInstanceImpl

from scope_temporal import (
    Definition,
    InteractionHandle,
    ModelRequest,
    Response,
    ScopeError,
    ScopeWorker,
    ScriptedModel,
    TreeSnapshot,
    reply,
    require_tool_input,
    tool,
    tool_input_continuation,
)
from tests.live.harness import TOOL_CALL_MODE, RecordingClient, eventually, fresh_id, in_mode


@tool(permission="read", execution="parallel")
async def lookup(key: str) -> str:
    """Look a key up (briefly: the other runs' tasks evict this one meanwhile)."""
    await asyncio.sleep(0.05)
    return f"value of {key}"


@tool(permission="read")
async def confirm() -> str:
    """Ask the user to confirm (the run waits for the answer)."""
    if tool_input_continuation() is None:
        require_tool_input("Sure?", {"type": "object", "properties": {"ok": {"type": "boolean"}}})
    return "confirmed"


def agent(request: ModelRequest) -> Response:
    """Two lookups for each new user message (or a confirmation, when the message says
    so), then a reply naming every user message it saw."""
    last = request.messages[-1]
    if last.role == "user" and last.text == "confirm":
        return reply.tool_calls(("confirm", {}))
    if last.role == "user":
        return reply.tool_calls(
            ("lookup", {"key": f"{last.text}-a"}), ("lookup", {"key": last.text})
        )
    users = [m.text for m in request.messages if m.role == "user"]
    return reply.text(f"answered {' | '.join(users)}")


DEFINITION = Definition("evicted", tools=[lookup, confirm], max_concurrent_tool_calls=2)


class Caught(logging.Handler):
    """What temporalio logs at warning or above, and how many runs it evicted."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.evictions = 0
        self.problems: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.problems.append(self.format(record))


@pytest.fixture
def caught(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Caught, list[str]]]:
    """temporalio's log, its evictions, and every exception ignored meanwhile."""
    handler, ignored = Caught(), []
    evict = _WorkflowInstanceImpl._apply_remove_from_cache

    def counted(instance: _WorkflowInstanceImpl, job: Any) -> None:
        handler.evictions += 1
        evict(instance, job)

    # the SDK's own eviction step, counted (it logs each one at debug level only)
    monkeypatch.setattr(_WorkflowInstanceImpl, "_apply_remove_from_cache", counted)
    logger = logging.getLogger("temporalio")
    logger.addHandler(handler)
    hook = sys.unraisablehook

    def record(unraisable: Any) -> None:
        ignored.append(f"{unraisable.object!r}: {unraisable.exc_value!r}")

    sys.unraisablehook = record
    try:
        yield handler, ignored
    finally:
        sys.unraisablehook = hook
        logger.removeHandler(handler)


async def patient_snapshot(handle: InteractionHandle) -> TreeSnapshot | None:
    """The snapshot, or None when the query timed out: with one cached workflow, a query
    waits for the one cache slot while the other runs' tasks take it (under load, past
    the server's 10 s query timeout, or the client's)."""
    try:
        return await handle.snapshot()
    except ScopeError as error:
        if "query timed out" not in str(error) and "Timeout expired" not in str(error):
            raise
        return None


def has_one_pending_input(snap: TreeSnapshot | None) -> bool:
    return snap is not None and len(snap.pending_tool_inputs) == 1


def worker(env: WorkflowEnvironment, task_queue: str) -> ScopeWorker:
    """A worker that caches one workflow: each workflow task of one run evicts another."""
    mode = TOOL_CALL_MODE[0]
    return ScopeWorker(
        env.client,
        task_queue=task_queue,
        definitions=[in_mode(DEFINITION, mode) if mode else DEFINITION],
        tools=[lookup, confirm],
        models={"default": ScriptedModel(agent)},
        max_cached_workflows=1,
    )


async def test_seam_12_evicted_runs_and_sessions_complete_and_nothing_is_ignored(
    temporal_env: WorkflowEnvironment, caught: tuple[Caught, list[str]]
) -> None:
    log, ignored = caught
    task_queue = fresh_id("tq-evict")
    scope = RecordingClient(temporal_env.client, task_queue=task_queue)
    session = scope.session("evicted", id=fresh_id("evict-chat"))
    async with worker(temporal_env, task_queue):
        # evicted mid-run, mid-tool-call and mid-session, on every workflow task
        runs = [await scope.start("evicted", f"q{n}") for n in range(3)]
        first = await session.send("s0", message_id="m0")
        outputs = await asyncio.gather(*(run.result() for run in runs))
        assert [o.text for o in outputs] == [f"answered q{n}" for n in range(3)]
        assert [o.model_calls for o in outputs] == [2] * 3
        assert (await first.result()).text == "answered s0"
        # left running when the worker stops: an idle session and a run waiting for input
        waiting = await scope.start("evicted", "confirm")
        snap = await eventually(
            lambda: patient_snapshot(waiting), has_one_pending_input, timeout=90
        )
        assert snap is not None
        # its last workflow task (the steer's) leaves the run in the cache: a worker that
        # stops drops it from there without evicting it in its loop
        assert await waiting.steer("st", "and hurry")
    gc.collect()  # a run dropped without its workflow loop is closed here, if anywhere
    async with worker(temporal_env, task_queue):
        [pending] = snap.pending_tool_inputs
        await waiting.answer(pending, "a1", {"ok": True})
        assert (await waiting.result()).text == "answered confirm | and hurry"
        second = await session.send("s1", message_id="m1")
        assert (await second.result()).text == "answered s0 | s1"
        await session.end()
        assert (await session.snapshot()).status == "ended"
    gc.collect()
    assert log.evictions >= 10, "the runs must have been evicted mid-run"
    assert ignored == []
    assert log.problems == []

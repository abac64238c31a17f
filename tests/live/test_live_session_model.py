"""The model-based test of sessions on a dev server (issue 25): the machine of
tests/unit/test_session_model.py, unchanged, driving `ScopeClient` sessions
(`SessionHandle`, `TurnHandle`) on a worker started by `serving(...)`, with the same
world (scripted model, tools, approval policy) and reference model. Hypothesis runs the
machine in a thread; each step's calls run on the test's event loop, where the worker
runs. Small in the default run; long under `--full`."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from contextlib import AsyncExitStack
from typing import Any, ClassVar, TypeVar

import pytest
from hypothesis import Phase, settings
from hypothesis.errors import Flaky
from hypothesis.stateful import run_state_machine_as_test
from temporalio.testing import WorkflowEnvironment

from scope_temporal import Message, ScopeClient
from scope_temporal.errors import InteractionNotFound, ScopeError
from scope_temporal.interaction.session_values import SendReceipt, SessionSnapshot
from scope_temporal.interaction.snapshot import PendingToolInput, UnknownEffect
from scope_temporal.outputs import Output
from tests.live.harness import fresh_id, serving
from tests.unit.session_model_world import (
    TOOLS,
    Host,
    SameCalls,
    World,
    definition,
    scripted,
)
from tests.unit.test_session_model import EXAMPLES, FIRST, FOUND, SETTINGS, SessionModel

T = TypeVar("T")
LIMIT = 14_000
LOOP: list[asyncio.AbstractEventLoop] = []
ENV: list[WorkflowEnvironment] = []


class LiveHost(SameCalls):
    """A session on the dev server (SessionHandle, TurnHandle), on a worker of its own
    (`open`: each example starts from a fresh worker and task queue)."""

    poll = 0.2  # each poll is a query; an ended session's is answered by a replay
    bound = 30.0

    def __init__(self, env: WorkflowEnvironment, session_id: str, *, every: int) -> None:
        self.env, self.id, self.every = env, session_id, every
        self.stack = AsyncExitStack()

    async def open(self) -> None:
        self.client: ScopeClient = await self.stack.enter_async_context(
            serving(
                self.env,
                [definition("Be brief.")],
                tools=TOOLS,
                models={"default": scripted()},
                payload_limit_bytes=LIMIT,
            )
        )

    def handle(self, context: dict[str, Any] | None) -> Any:
        return self.client.session(
            "talk", id=self.id, context=context, continue_as_new_every=self.every
        )

    async def send(self, handle: Any, text: str, message_id: str) -> SendReceipt:
        await handle.send(text, message_id=message_id)
        receipt: SendReceipt = handle.last_receipt
        return receipt

    async def end(self, handle: Any) -> None:
        await handle.end()

    async def snapshot(self, handle: Any) -> SessionSnapshot:
        try:
            snap: SessionSnapshot = await handle.snapshot()
        except InteractionNotFound:  # no message yet: no workflow, an idle session
            return SessionSnapshot(
                session_id=self.id,
                definition="talk",
                status="idle",
                turns=(),
                messages=0,
                digest="",
            )
        return snap

    async def transcript(self, handle: Any) -> tuple[Message, ...]:
        try:
            return tuple((await handle.transcript()).messages)
        except InteractionNotFound:
            return ()

    def turn(self, handle: Any, number: int) -> Any:
        return handle.turn(number)

    async def result(self, turn: Any) -> Output:
        out: Output = await turn.result()
        return out

    async def waits(self, turn: Any) -> tuple[list[PendingToolInput], list[UnknownEffect]]:
        try:
            snap = await turn.snapshot()
        except ScopeError:  # its workflow has not started yet
            return [], []
        return list(snap.pending_tool_inputs), list(snap.unknown_effects)

    async def close(self) -> None:
        await self.stack.aclose()


class LiveSessionModel(SessionModel):
    """The same rules and checks; the calls go to the dev server."""

    limits: ClassVar[tuple[int, ...]] = (LIMIT,)
    instructions: ClassVar[tuple[str, ...]] = ("Be brief.",)
    max_subscribers: ClassVar[int] = 2
    gated: ClassVar[bool] = False

    def open_loop(self) -> None:
        self.loop = LOOP[0]

    def close_loop(self) -> None:
        for _, _, task in self.subscribers:
            self.loop.call_soon_threadsafe(task.cancel)

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result(timeout=180)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise

    def spawn(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Future[Any]:
        async def start() -> asyncio.Future[Any]:
            return asyncio.ensure_future(coroutine)

        return self.run(start())

    def make_host(self, world: World, every: int) -> Host:
        host = LiveHost(ENV[0], fresh_id(f"model-{EXAMPLES[0]}"), every=every)
        self.run(host.open())
        return host


async def drive(env: WorkflowEnvironment, examples: int, steps: int) -> None:
    LOOP[:] = [asyncio.get_running_loop()]
    ENV[:] = [env]
    # no shrinking: a live failure is reported as found (a replay may not repeat it)
    chosen = settings(
        SETTINGS, max_examples=examples, stateful_step_count=steps, phases=[Phase.generate]
    )
    FOUND.clear()
    FIRST.clear()
    try:
        await asyncio.to_thread(run_state_machine_as_test, LiveSessionModel, settings=chosen)
    except Flaky as flaky:  # a live replay need not repeat a failure: report the first
        error, log = FIRST[0] if FIRST else (None, [])
        raise AssertionError(
            f"first failure, at example {FOUND[:1]}: {error!r}\n" + "\n".join(log)
        ) from flaky


async def test_live_sessions_keep_their_promises_whatever_a_host_does(
    temporal_env: WorkflowEnvironment,
) -> None:
    await drive(temporal_env, examples=4, steps=15)


@pytest.mark.full
@pytest.mark.timeout(1800)
async def test_live_sessions_keep_their_promises_long(temporal_env: WorkflowEnvironment) -> None:
    await drive(temporal_env, examples=40, steps=50)

"""The world the model-based test of sessions drives (tests/unit/test_session_model.py):
a scripted model whose every call waits until a rule says how it ends, a read tool whose
result size the rule picks, a covered tool (an `exec` tool under `deny_writes`, so every
call waits for a person's approval) that records each time its body runs, and the
payload limit. The same world serves the in-process host (`LocalHost`, here) and the live
one (tests/live/test_live_session_model.py).

A `Host` is what the machine drives: the public verbs of a session handle and of a turn's
handle, the same for `LocalSession`/`LocalRun` and `SessionHandle`/`InteractionHandle`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from scope_temporal import (
    ApprovalPolicy,
    Definition,
    Event,
    Message,
    ModelRequest,
    Response,
    RunHandle,
    RunProgress,
    ScriptedModel,
    TaskRun,
    background_tool,
    reply,
    tool,
)
from scope_temporal.interaction.session_values import SendReceipt, SessionSnapshot
from scope_temporal.interaction.snapshot import PendingToolInput, UnknownEffect
from scope_temporal.models import ModelRejected
from scope_temporal.outputs import Output
from scope_temporal.testing import LocalRunner

Outcome = Literal["text", "lookup", "restart", "both", "task", "reject", "unknown"]
"""How a waiting model call ends: a text reply, a call of the read tool, a call of the
covered tool, both in one batch (the read tool's result settles while the covered call
waits for its approval), a background task launched (it runs until a rule lets it end,
then tells the session), a definite failure (a provider's 400), or an unknown outcome (the call
raised: only the host can settle it)."""


@dataclass
class ModelCall:
    request: ModelRequest
    answer: asyncio.Future[Response | BaseException]


@dataclass
class World:
    """One example's world: what the model and the tools saw and did."""

    limit: int
    instructions: str
    waiting: list[ModelCall] = field(default_factory=list)
    requests: list[ModelRequest] = field(default_factory=list)
    covered_runs: list[str] = field(default_factory=list)
    """The covered tool's bodies that ran, by ticket."""
    tickets: int = 0
    gates: list[asyncio.Event] = field(default_factory=list)
    """One per background task launched, in order: set, the task ends."""

    async def model(self, request: ModelRequest) -> Response:
        self.requests.append(request)
        call = ModelCall(request, asyncio.get_running_loop().create_future())
        self.waiting.append(call)
        try:
            answer = await call.answer
        finally:
            if call in self.waiting:
                self.waiting.remove(call)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    def answer(self, outcome: Outcome, size: int = 40) -> str | None:
        """End the oldest waiting model call as `outcome`; the ticket of a covered call."""
        call = self.waiting.pop(0)
        ticket = None
        if outcome == "text":
            result: Response | BaseException = reply.text(f"reply to {len(self.requests)}")
        elif outcome == "lookup":
            result = reply.tool_calls(("lookup", {"size": size}))
        elif outcome in ("restart", "both"):
            self.tickets += 1
            ticket = f"t{self.tickets}"
            calls = [("restart", {"ticket": ticket})]
            if outcome == "both":
                calls.insert(0, ("lookup", {"size": size}))
            result = reply.tool_calls(*calls)
        elif outcome == "task":
            result = reply.tool_calls(("report", {"run_in_background": True}))
        elif outcome == "reject":
            result = ModelRejected("400: bad request", status=400)
        else:
            result = RuntimeError("connection reset: the call's outcome is unknown")
        if not call.answer.done():
            call.answer.set_result(result)
        return ticket

    def notify(self) -> None:
        """Let the oldest background task still running end (it tells its session)."""
        gate = next(g for g in self.gates if not g.is_set())
        gate.set()

    def release(self) -> None:
        """Answer every waiting call with text, end every task (at the end of an example)."""
        for gate in self.gates:
            gate.set()
        for call in self.waiting:
            if not call.answer.done():
                call.answer.set_result(reply.text("bye"))
        self.waiting.clear()


CURRENT: list[World] = []
"""The world of the running example (the model and tools are module-level: the live
worker is shared by every example)."""


async def model(request: ModelRequest) -> Response:
    return await CURRENT[0].model(request)


@tool(permission="read")
def lookup(size: int) -> str:
    """Look something up (the answer has `size` characters)."""
    return "r" * size


@tool(permission="exec")
def restart(ticket: str) -> str:
    """Restart a service (needs a person's approval)."""
    CURRENT[0].covered_runs.append(ticket)
    return f"{ticket} restarted"


class ReportArgs(BaseModel):
    pass


@background_tool(foreground_timeout=0.05)
class Report:
    """Write a report in the background (it ends when a rule lets it)."""

    async def start(self, task_id: str, arguments: ReportArgs, attempt: int) -> RunHandle:
        gate = asyncio.Event()
        CURRENT[0].gates.append(gate)

        async def work(progress: RunProgress) -> Any:
            await gate.wait()
            return {"report": "ready"}

        return TaskRun(work)


TOOLS = [lookup, restart, Report]


def definition(instructions: str) -> Definition:
    return Definition(
        "talk", instructions=instructions, tools=TOOLS, approval=ApprovalPolicy.deny_writes()
    )


def scripted() -> ScriptedModel:
    return ScriptedModel(model)


def ticket_of(pending: PendingToolInput) -> str | None:
    """The covered call's ticket an approval wait is about (its prompt holds the arguments)."""
    text = str(pending.prompt)
    for n in range(CURRENT[0].tickets, 0, -1):
        if f"t{n}'" in text or f't{n}"' in text:
            return f"t{n}"
    return None


class Turn(Protocol):
    id: str


class Host(Protocol):
    """The verbs the machine drives, for one session (in-process or live)."""

    poll: float
    bound: float

    def handle(self, context: dict[str, Any] | None) -> Any: ...
    async def send(self, handle: Any, text: str, message_id: str) -> SendReceipt: ...
    async def end(self, handle: Any) -> None: ...
    async def snapshot(self, handle: Any) -> SessionSnapshot: ...
    async def transcript(self, handle: Any) -> tuple[Message, ...]: ...
    def turn(self, handle: Any, number: int) -> Any: ...
    async def result(self, turn: Any) -> Output: ...
    async def waits(self, turn: Any) -> tuple[list[PendingToolInput], list[UnknownEffect]]: ...
    async def answer(self, turn: Any, pending: PendingToolInput, id: str, answer: Any) -> Any: ...
    async def retry(self, turn: Any, unknown: UnknownEffect) -> None: ...
    def events(self, handle: Any, after: tuple[int, int] | None) -> AsyncIterator[Event]: ...
    def turn_events(self, turn: Any) -> AsyncIterator[Event]: ...
    async def close(self) -> None: ...


class SameCalls:
    """The calls a host makes the same way in process and live (the handles agree)."""

    async def answer(self, turn: Any, pending: PendingToolInput, id: str, answer: Any) -> Any:
        return await turn.answer(pending, id, answer)

    async def retry(self, turn: Any, unknown: UnknownEffect) -> None:
        await turn.retry_model_call(unknown)

    def events(self, handle: Any, after: tuple[int, int] | None) -> AsyncIterator[Event]:
        iterator: AsyncIterator[Event] = handle.events(after=after)
        return iterator

    def turn_events(self, turn: Any) -> AsyncIterator[Event]:
        iterator: AsyncIterator[Event] = turn.events()
        return iterator


class LocalHost(SameCalls):
    """A session on `LocalRunner` (LocalSession, LocalRun)."""

    poll = 0.001
    bound = 5.0

    def __init__(self, world: World, session_id: str, *, every: int) -> None:
        self.runner = LocalRunner(
            definitions=[definition(world.instructions)],
            tools=TOOLS,
            models={"default": scripted()},
            payload_limit_bytes=world.limit,
        )
        self.id = session_id
        self.every = every

    def handle(self, context: dict[str, Any] | None) -> Any:
        return self.runner.session(
            "talk", id=self.id, context=context, continue_as_new_every=self.every
        )

    async def send(self, handle: Any, text: str, message_id: str) -> SendReceipt:
        await handle.send(text, message_id=message_id)
        receipt: SendReceipt = handle.last_receipt
        return receipt

    async def end(self, handle: Any) -> None:
        await handle.end()

    async def snapshot(self, handle: Any) -> SessionSnapshot:
        snap: SessionSnapshot = await handle.snapshot()
        return snap

    async def transcript(self, handle: Any) -> tuple[Message, ...]:
        return tuple((await handle.transcript()).messages)

    def turn(self, handle: Any, number: int) -> Any:
        return handle.turn(number)

    async def result(self, turn: Any) -> Output:
        out: Output = await turn.result()
        return out

    async def waits(self, turn: Any) -> tuple[list[PendingToolInput], list[UnknownEffect]]:
        snap = turn.snapshot()
        return list(snap.pending_tool_inputs), list(snap.unknown_effects)

    async def close(self) -> None:
        await self.runner.aclose()


Runner = Callable[[Awaitable[Any]], Any]
"""Runs one coroutine to its end on the host's event loop (from the machine's thread)."""

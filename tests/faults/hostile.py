"""A live target for hostile input, and the checks every hostile input must pass.

The target Interaction holds still in a state where every handler has something to
refuse: its round has one ToolCall child waiting for input (`approve`) and one holding
an unknown outcome (`lost`). Any payload may be sent to any of the three processes as a
signal or an update (raw bytes, bypassing every client-side check). Each must:
- as an update: fail at the caller with one of our codes (or be refused by the server);
- as a signal: be recorded as rejected somewhere in the tree (or refused by the server);
- change nothing else in the tree, and fail no workflow task.
Valid steers sent in between must all be applied (an accepted signal is never lost).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from temporalio.api.common.v1 import Payload
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowUpdateFailedError
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    Definition,
    HostFailure,
    InteractionHandle,
    Message,
    ModelRequest,
    Response,
    ScriptedModel,
    ToolResult,
    TreeSnapshot,
    reply,
    require_tool_input,
    settle_tool_result,
    tool,
    tool_input_continuation,
)
from scope_temporal import names as tnames
from scope_temporal.errors import CODE_KINDS
from tests.faults import figures
from tests.live.harness import eventually, fresh_id, serving

APPROVAL: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}},
    "required": ["approved"],
    "additionalProperties": False,
}
Handler = Literal["steer", "tool_input", "resolve", "pause", "resume"]
Where = Literal["root", "wait", "unknown"]
HANDLER_NAMES: dict[Handler, str] = {
    "steer": tnames.STEER,
    "tool_input": tnames.TOOL_INPUT,
    "resolve": tnames.RESOLVE,
    "pause": tnames.PAUSE,
    "resume": tnames.RESUME,
}


@tool(permission="read")
def approve(topic: str) -> str:
    """Ask the host to approve."""
    continuation = tool_input_continuation()
    if continuation is None:
        require_tool_input(f"Approve {topic}?", APPROVAL)
    else:
        _state, answer = continuation
        return f"{topic}: approved={answer['approved']}"
    raise AssertionError("require_tool_input returned")


@tool(permission="read")
def lost(what: str) -> str:
    """Its outcome is always unknown."""
    raise HostFailure(f"lost while fetching {what}")


def _answer(request: ModelRequest) -> Response:
    if request.model_call_seq == 1:
        return reply.tool_calls(("approve", {"topic": "deploy"}), ("lost", {"what": "logs"}))
    steers = [m.text for m in request.messages[1:] if m.role == "user"]
    return reply.text("steers: " + ",".join(steers))


def target_model() -> ScriptedModel:
    return ScriptedModel(_answer)


HOSTILE = Definition(
    "hostile", tools=[approve, lost], max_concurrent_tool_calls=2, capabilities={"read"}
)


def raw(data: bytes) -> RawValue:
    return RawValue(Payload(metadata={"encoding": b"json/plain"}, data=data))


def as_json(value: Any) -> bytes:
    return json.dumps(value).encode()


@dataclass
class Target:
    handle: InteractionHandle
    ids: dict[Where, str]
    baseline: TreeSnapshot
    wait_id: str
    unknown: Any
    """The held UnknownEffect (its request is the base of forged settlements)."""
    valid_steers: list[str] = field(default_factory=list)
    tried: int = 0

    @property
    def client(self) -> Any:
        return self.handle.scope.client


async def held_target(handle: InteractionHandle) -> Target:
    snap = await eventually(
        handle.snapshot,
        lambda s: len(s.pending_tool_inputs) == 1 and len(s.unknown_effects) == 1,
    )
    [pending] = snap.pending_tool_inputs
    [unknown] = snap.unknown_effects
    ids: dict[Where, str] = {
        "root": handle.id,
        "wait": pending.process_id,
        "unknown": unknown.process_id,
    }
    return Target(handle, ids, snap, pending.wait_id, unknown)


def fingerprint(snap: TreeSnapshot) -> list[dict[str, Any]]:
    """The tree minus the rejection records: what no refused input may change."""
    return [
        p.model_copy(update={"rejected_signals": ()}).model_dump(mode="json")
        for p in sorted(snap.processes, key=lambda p: p.process_id)
    ]


def rejections(snap: TreeSnapshot) -> int:
    return sum(len(p.rejected_signals) for p in snap.processes)


async def task_failures(target: Target) -> int:
    count = 0
    for workflow_id in target.ids.values():
        history = await target.client.get_workflow_handle(workflow_id).fetch_history()
        count += sum(
            1 for e in history.events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
        )
    return count


async def send_hostile(
    target: Target, where: Where, handler: Handler, data: bytes, *, as_update: bool
) -> str:
    """Send one hostile payload and check it was refused and changed nothing.

    Returns how it was refused: `update:<code>`, `signal:<code>` or `server`.
    """
    target.tried += 1
    figures.FIGURES["hostile_inputs"] += 1
    handle = target.client.get_workflow_handle(target.ids[where])
    before = await target.handle.snapshot()
    if as_update:
        try:
            await handle.execute_update(HANDLER_NAMES[handler], raw(data))
        except WorkflowUpdateFailedError as error:
            cause = error.cause
            assert isinstance(cause, ApplicationError), repr(cause)
            assert cause.type in CODE_KINDS, f"untyped refusal {cause.type}: {cause.message}"
            how = f"update:{cause.type}"
        except RPCError as error:  # refused by the server before reaching the workflow
            how = f"server:{error.status.name}"
        else:
            raise AssertionError(f"a hostile {handler} update was accepted: {data[:200]!r}")
        after = await target.handle.snapshot()
        assert rejections(after) == rejections(before)
    else:
        try:
            await handle.signal(HANDLER_NAMES[handler], raw(data))
        except RPCError as error:
            how = f"server:{error.status.name}"
            after = await target.handle.snapshot()
        else:
            after = await eventually(
                target.handle.snapshot, lambda s: rejections(s) > rejections(before)
            )
            assert rejections(after) == rejections(before) + 1
            newest = [p.rejected_signals[-1] for p in after.processes if p.rejected_signals]
            codes = {r.code for r in newest}
            assert codes <= set(CODE_KINDS), codes
            how = "signal"
    assert fingerprint(after) == fingerprint(before), f"{handler} {data[:200]!r} changed state"
    figures.FIGURES["hostile_refused"] += 1
    return how


PayloadBuilder = Callable[[Target], bytes]


@asynccontextmanager
async def serving_target(env: WorkflowEnvironment, prefix: str) -> AsyncIterator[Target]:
    """A worker serving HOSTILE and one Interaction of it held still (see the module)."""
    async with serving(
        env, [HOSTILE], tools=[approve, lost], models={"default": target_model()}
    ) as scope:
        handle = await scope.start("hostile", [Message.user("go")], id=fresh_id(prefix))
        yield await held_target(handle)


async def steer_valid(target: Target) -> None:
    """One more valid steer: accepted now, and it must be applied at the end, in order."""
    signal_id = f"valid-{len(target.valid_steers)}"
    assert await target.handle.steer(signal_id, f"steer {signal_id}") is True
    target.valid_steers.append(signal_id)


async def finish(target: Target, answer: Any = None) -> None:
    """Answer (`answer`, default an approved `{"approved": true}`) and settle properly:
    the Interaction completes with every valid steer applied in order, and no workflow
    task failed on the way."""
    assert await task_failures(target) == 0
    snap = await target.handle.snapshot()
    [pending] = snap.pending_tool_inputs
    good = answer if answer is not None else {"approved": True}
    await target.handle.answer(pending, "good-answer", good)
    call = target.unknown.request.call
    result = ToolResult(call_id=call.id, name=call.name, content="logs (checked)")
    settlement = settle_tool_result(target.unknown.request, result, "succeeded")
    await target.handle.resolve(target.unknown, settlement)
    out = await asyncio.wait_for(target.handle.result(), 30)
    assert out.text == "steers: " + ",".join(f"steer {s}" for s in target.valid_steers)
    assert (await target.handle.snapshot()).applied_signals == target.valid_steers
    assert await task_failures(target) == 0

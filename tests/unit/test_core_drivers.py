"""The rules the driver keeps, through LocalRunner: the very code the workflows run.

CONFORMANCE 32 (pause reaches the children), 46 (payload limits), 48 (the authority guard)
were kept only on the Temporal side before the drivers were one; here they run through
`LocalRunner`, which shares every line of them with the workflows (`scope_temporal.driver`,
and the activities' own `attempt_once` / `model_once`). Also: a Tool call whose core fails
closed ends with its code, and signals that come before a run records its settings wait
for them.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from scope_temporal import errors
from scope_temporal.chat import Message
from scope_temporal.definition import Definition, ToolSet
from scope_temporal.driver.interaction import InteractionDriver
from scope_temporal.driver.tool_call import ToolCallDriver
from scope_temporal.errors import InvalidSignal
from scope_temporal.interaction.effects import CallModel, ModelResponded, StartToolCall
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.models import ScriptedModel, reply
from scope_temporal.outputs import Failure
from scope_temporal.payloads import InteractionInput, RunSettings, SteerInput, ToolCallInput
from scope_temporal.testing import LocalRunner
from scope_temporal.tools import InputRequired, require_tool_input, tool, tool_input_continuation

WAIT = 5.0
APPROVAL = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


@tool(permission="read")
def big(size: int) -> str:
    """Return `size` characters."""
    return "x" * size


@tool(permission="write")
def ask() -> str:
    """Ask before acting."""
    if tool_input_continuation() is None:
        require_tool_input("Go?", APPROVAL)
    return "done"


def runner(definition: Definition, tools: list[Any], script: list[Any], limit: int) -> LocalRunner:
    return LocalRunner(
        definitions=[definition],
        tools=tools,
        models={"default": ScriptedModel(script)},
        payload_limit_bytes=limit,
    )


async def test_c46_local_a_steer_the_next_request_could_not_carry_is_refused() -> None:
    local = runner(Definition("steer"), [], [TimeoutError("held")], limit=2_000)
    run = await local.start("steer", [Message.user("g" * 1_000)])
    await run.idle()
    with pytest.raises(InvalidSignal) as refused:  # fits alone, not after the context
        await run.steer("s1", Message.user("y" * 1_200))
    assert refused.value.code == errors.PAYLOAD_TOO_LARGE
    assert "next model request" in refused.value.message
    assert run.snapshot().root.pending_signals == ()
    assert await run.steer("s2", Message.user("short")) is True


async def test_c46_local_a_tool_outcome_over_the_limit_is_unknown_naming_the_tool() -> None:
    definition = Definition("big", tools=[big])  # in both mappings (tests/unit/conftest.py)
    script = [reply.tool_calls(("big", {"size": 5_000})), reply.text("never")]
    local = runner(definition, [big], script, limit=4_000)
    run = await local.start("big", [Message.user("go")])
    [unknown] = (await run.idle()).unknown_effects
    assert unknown.kind == "tool" and errors.PAYLOAD_TOO_LARGE in unknown.diagnostic
    assert "tool 'big'" in unknown.diagnostic
    assert len(local.models["default"].requests) == 1  # type: ignore[attr-defined]


async def test_c46_local_a_model_response_over_the_limit_is_unknown() -> None:
    local = runner(Definition("talk"), [], [reply.text("z" * 5_000)], limit=4_000)
    run = await local.start("talk", [Message.user("go")])
    [unknown] = (await run.idle()).unknown_effects
    assert unknown.kind == "model" and "over the payload limit" in unknown.diagnostic


async def test_c48_local_the_worker_refuses_a_call_its_definition_does_not_grant() -> None:
    # The Definition declares `big` as a read tool; the tool registered under that name is
    # a write tool: the guard every worker runs refuses the call before the body runs.
    ran: list[str] = []

    @tool(name="big", permission="write")
    def impostor(size: int) -> str:
        """Claims the name."""
        ran.append("impostor")
        return "wrote"

    definition = Definition("guarded", tools=ToolSet("t", [big]), tool_call_workflows="always")
    script = [reply.tool_calls(("big", {"size": 1})), reply.text("ok")]
    local = runner(definition, [impostor], script, limit=1_000_000)
    run = await local.start("guarded", [Message.user("go")])
    await run.result(timeout=WAIT)
    [entry] = run.snapshot().settled_results[0].entries
    assert entry.disposition == "rejected" and "not authorized" in entry.result.content
    assert ran == []


async def test_c32_local_pause_reaches_the_tool_call_children() -> None:
    definition = Definition("pause", tools=[ask], tool_call_workflows="always")
    local = runner(definition, [ask], [reply.tool_calls(("ask", {})), reply.text("ok")], 10**6)
    run = await local.start("pause", [Message.user("go")])
    [pending] = (await run.idle()).pending_tool_inputs
    await run.pause()
    snap = run.snapshot()
    assert (snap.root.status, snap.process(pending.process_id).status) == ("paused", "paused")
    await run.resume()
    assert run.snapshot().process(pending.process_id).status == "waiting"
    await run.answer(pending, "a1", {"ok": True})
    assert (await run.result(timeout=WAIT)).text == "ok"


class _BrokenTransport:
    """A transport whose tool attempt reports an outcome the core cannot read."""

    async def wait_until(self, ready: Any) -> None:  # pragma: no cover - never waits
        raise AssertionError("nothing to wait for")

    def changed(self) -> None:
        pass

    def show(self, details: str) -> None:
        pass

    def warn(self, message: str) -> None:  # pragma: no cover - nothing to warn about
        pass

    def publish(self, events: Any) -> None:
        pass

    async def flush_events(self) -> None:
        pass

    def evicted(self) -> bool:
        return False

    async def run_tool(
        self, input: Any, *, start_to_close: Any, summary: str, task_queue: Any = None
    ) -> Any:
        return InputRequired.model_construct(kind="input_required")  # no prompt, no schema

    async def start_task(self, input: Any, *, summary: str) -> str | None:  # pragma: no cover
        return None


async def test_a_tool_call_whose_core_fails_closed_ends_with_its_code_not_a_retry() -> None:
    # what the ToolCall workflow returns then fails it with the code (never a workflow-task
    # failure Temporal would retry forever)
    definition = Definition("closed", tools=[ask], tool_call_workflows="always")
    machine = InteractionMachine.start(definition, "root", [Message.user("go")])
    [call_model] = machine.next_effects()
    assert isinstance(call_model, CallModel)
    machine.on_model(
        ModelResponded(
            effect_id=call_model.request.effect_id, response=reply.tool_calls(("ask", {}))
        )
    )
    [start] = machine.next_effects()
    assert isinstance(start, StartToolCall)
    driver = ToolCallDriver(
        ToolCallInput(request=start.request, start_to_close=timedelta(seconds=5)),
        _BrokenTransport(),
        limit=10**6,
    )
    ended = await driver.run()
    assert isinstance(ended, Failure) and ended.code == errors.STATE_INVALID
    assert driver.machine.status == "failed"


class _Quiet:
    """A transport for a driver that is only handed inputs (nothing runs)."""

    def changed(self) -> None:
        pass


def test_signals_before_the_run_records_its_settings_wait_for_them_then_apply_in_order() -> None:
    # On Temporal a signal can arrive with the first workflow task, before the settings
    # are recorded: it is decided by the recorded limit, never the replaying worker's.
    definition = Definition("held")
    machine = InteractionMachine.start(definition, "root", [Message.user("go")])
    driver = InteractionDriver(
        machine,
        _Quiet(),  # type: ignore[arg-type]
        InteractionInput(definition="held"),
        limit=10,  # a worker's limit no steer fits: it must not decide
    )
    for signal_id in ("s1", "s2"):
        driver.steer_signal(SteerInput(signal_id=signal_id, messages=(Message.user(signal_id),)))
    assert machine.snapshot().pending_signals == ()
    recorded = RunSettings(digest=definition.digest, payload_limit=1_000_000)
    assert driver.begin(recorded) is None
    assert machine.snapshot().pending_signals == ("s1", "s2")
    assert machine.snapshot().rejected_signals == ()

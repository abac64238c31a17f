"""CONFORMANCE 13-24 on the pure core: scheduling, rejections, unknown tool effects, host
resolution, direct results and deferred-tool advertisement.

Scheduling is observed with async tools held on `asyncio.Event` gates: each tool records
when it starts and finishes and how many tools were running at once.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from scope_temporal.chat import Message, ToolResult
from scope_temporal.definition import Definition, ToolSet
from scope_temporal.errors import DefinitionError, SettlementMismatch
from scope_temporal.interaction.effects import (
    CallModel,
    CallSettled,
    ModelResponded,
    ModelSettlement,
    ModelUnknown,
    StartToolCall,
)
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.interaction.state import InteractionState
from scope_temporal.interaction.tool_call import ToolCallMachine, ToolCallState
from scope_temporal.models import ScriptedModel, reply
from scope_temporal.outputs import CompletionCandidate, CompletionDecision
from scope_temporal.settle import settle_model_result, settle_tool_result
from scope_temporal.testing import LocalRunner
from scope_temporal.tools import (
    Failed,
    HostFailure,
    Succeeded,
    ToolFailure,
    Unknown,
    advertise_tools,
    tool,
)

WAIT = 2.0


# --- helpers ---------------------------------------------------------------------------


class Gates:
    """Start/finish bookkeeping for gated tools; a tool runs until its gate is released."""

    def __init__(self) -> None:
        self.started_events: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)
        self.finished_events: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)
        self.release_events: defaultdict[str, asyncio.Event] = defaultdict(asyncio.Event)
        self.started: list[str] = []
        self.finished: list[str] = []
        self.running: set[str] = set()
        self.max_running = 0
        self.overlaps: list[tuple[str, frozenset[str]]] = []
        """(name, what else was running) at each start."""

    @contextmanager
    def track(self, name: str) -> Iterator[None]:
        self.overlaps.append((name, frozenset(self.running)))
        self.running.add(name)
        self.started.append(name)
        self.max_running = max(self.max_running, len(self.running))
        self.started_events[name].set()
        try:
            yield
        finally:
            self.running.discard(name)
            self.finished.append(name)
            self.finished_events[name].set()

    async def hold(self, name: str) -> None:
        with self.track(name):
            await self.release_events[name].wait()

    async def started_all(self, *names: str) -> None:
        for name in names:
            await asyncio.wait_for(self.started_events[name].wait(), WAIT)

    async def release(self, *names: str) -> None:
        for name in names:
            self.release_events[name].set()
            await asyncio.wait_for(self.finished_events[name].wait(), WAIT)

    def ran_with(self, name: str) -> frozenset[str]:
        """Everything that was running when `name` started, or that started while it ran."""
        index = self.started.index(name)
        before = next(o for n, o in self.overlaps if n == name)
        end = self.finished.index(name) if name in self.finished else None
        during = set()
        for other, running in self.overlaps[index + 1 :]:
            if name in running:
                during.add(other)
        assert end is not None
        return frozenset(before | during)


def gated_tool(gates: Gates, tool_name: str, **options: Any) -> Any:
    @tool(name=tool_name, **options)
    async def body(name: str) -> str:
        """Wait for the gate, then report."""
        await gates.hold(name)
        return f"{tool_name} done {name}"

    return body


def model_of(runner: LocalRunner, name: str = "default") -> ScriptedModel:
    model = runner.models[name]
    assert isinstance(model, ScriptedModel)
    return model


def runner_with(definition: Definition, tools: list[Any], script: list[Any]) -> LocalRunner:
    return LocalRunner(
        definitions=[definition], tools=tools, models={"default": ScriptedModel(script)}
    )


def tool_results_sent(runner: LocalRunner, request: int) -> list[ToolResult]:
    """The tool results at the end of the `request`-th model request (0-based)."""
    messages = model_of(runner).requests[request].messages
    tool_messages = [m for m in messages if m.role == "tool"]
    return tool_messages[-1].tool_results


async def still_not_started(gates: Gates, name: str) -> None:
    """Give every runnable task a chance to run, then check `name` has not started."""
    for _ in range(5):
        await asyncio.sleep(0.01)
    assert name not in gates.started, f"{name} started too early: {gates.started}"


def open_round(
    definition: Definition, *calls: Any, process_id: str = "p"
) -> tuple[InteractionMachine, list[Any]]:
    """A pure machine whose first model response asked for `calls`; returns its effects."""
    machine = InteractionMachine.start(definition, process_id, [Message.user("go")])
    [call_model] = machine.next_effects()
    assert isinstance(call_model, CallModel)
    machine.on_model(
        ModelResponded(effect_id=call_model.request.effect_id, response=reply.tool_calls(*calls))
    )
    return machine, machine.next_effects()


# --- 13: results in call order -----------------------------------------------------------


async def test_c13_results_reach_the_model_in_call_order_whatever_order_they_finish() -> None:
    gates = Gates()
    work = gated_tool(gates, "work", permission="read")
    definition = Definition("order", tools=[work], max_concurrent_tool_calls=3)
    runner = runner_with(
        definition,
        [work],
        [
            reply.tool_calls(
                ("work", {"name": "a"}), ("work", {"name": "b"}), ("work", {"name": "c"})
            ),
            reply.text("ok"),
        ],
    )
    run = await runner.start("order", [Message.user("go")])
    await gates.started_all("a", "b", "c")
    await gates.release("c", "b", "a")
    await run.result(timeout=WAIT)
    assert gates.finished == ["c", "b", "a"]
    results = tool_results_sent(runner, 1)
    assert [r.content for r in results] == ["work done a", "work done b", "work done c"]
    assert [r.call_id for r in results] == ["call_1", "call_2", "call_3"]
    [round_] = run.snapshot().settled_results
    assert [e.call_index for e in round_.entries] == [0, 1, 2]
    assert [e.result.content for e in round_.entries] == [r.content for r in results]


async def test_c13_order_holds_with_sleeps_of_different_lengths() -> None:
    finished: list[int] = []

    @tool(permission="read")
    async def nap(ms: int) -> str:
        """Sleep."""
        await asyncio.sleep(ms / 1000)
        finished.append(ms)
        return f"slept {ms}"

    definition = Definition("naps", tools=[nap], max_concurrent_tool_calls=4)
    durations = [40, 5, 25, 1]
    runner = runner_with(
        definition,
        [nap],
        [reply.tool_calls(*(("nap", {"ms": ms}) for ms in durations)), reply.text("ok")],
    )
    await (await runner.start("naps", [Message.user("go")])).result(timeout=WAIT)
    assert finished == sorted(durations)
    assert [r.content for r in tool_results_sent(runner, 1)] == [f"slept {ms}" for ms in durations]


# --- 14: the concurrency window ------------------------------------------------------------


async def test_c14_window_of_two_never_runs_three_and_refills_when_any_finishes() -> None:
    gates = Gates()
    work = gated_tool(gates, "work", permission="read")
    definition = Definition("window", tools=[work], max_concurrent_tool_calls=2)
    runner = runner_with(
        definition,
        [work],
        [
            reply.tool_calls(
                ("work", {"name": "a"}), ("work", {"name": "b"}), ("work", {"name": "c"})
            ),
            reply.text("ok"),
        ],
    )
    run = await runner.start("window", [Message.user("go")])
    await gates.started_all("a", "b")
    await still_not_started(gates, "c")
    # the *second* one finishing frees the slot: the window refills from any finish
    await gates.release("b")
    await gates.started_all("c")
    assert "a" in gates.running
    await gates.release("a", "c")
    await run.result(timeout=WAIT)
    assert gates.max_running == 2
    assert gates.started == ["a", "b", "c"]


async def test_c14_default_window_is_one() -> None:
    gates = Gates()
    work = gated_tool(gates, "work", permission="read")
    definition = Definition("one-window", tools=[work])
    runner = runner_with(
        definition,
        [work],
        [reply.tool_calls(("work", {"name": "a"}), ("work", {"name": "b"})), reply.text("ok")],
    )
    run = await runner.start("one-window", [Message.user("go")])
    await gates.started_all("a")
    await still_not_started(gates, "b")
    await gates.release("a")
    await gates.started_all("b")
    await gates.release("b")
    await run.result(timeout=WAIT)
    assert gates.max_running == 1


# --- 15: concurrency keys ---------------------------------------------------------------------


async def test_c15_calls_sharing_a_concurrency_key_never_overlap() -> None:
    gates = Gates()
    db_read = gated_tool(gates, "db_read", permission="read", concurrency_key="db")
    db_scan = gated_tool(gates, "db_scan", permission="read", concurrency_key="db")
    free = gated_tool(gates, "free", permission="read")
    definition = Definition("keys", tools=[db_read, db_scan, free], max_concurrent_tool_calls=4)
    runner = runner_with(
        definition,
        [db_read, db_scan, free],
        [
            reply.tool_calls(
                ("db_read", {"name": "r1"}),
                ("db_scan", {"name": "s1"}),
                ("free", {"name": "f"}),
                ("db_read", {"name": "r2"}),
            ),
            reply.text("ok"),
        ],
    )
    run = await runner.start("keys", [Message.user("go")])
    # an unkeyed call overlaps a keyed one (the window is not the limit here) ...
    await gates.started_all("r1", "f")
    await still_not_started(gates, "s1")
    assert "r2" not in gates.started
    # ... but keyed calls follow one another, in call order
    await gates.release("r1")
    await gates.started_all("s1")
    await still_not_started(gates, "r2")
    await gates.release("s1")
    await gates.started_all("r2")
    await gates.release("r2", "f")
    await run.result(timeout=WAIT)
    keyed = {"r1", "s1", "r2"}
    for name in keyed:
        assert not (gates.ran_with(name) & (keyed - {name})), (name, gates.overlaps)
    assert [n for n in gates.started if n in keyed] == ["r1", "s1", "r2"]


# --- 16: read parallel, write/exec and exclusive calls are barriers ------------------------


async def test_c16_read_tools_run_in_parallel_by_default() -> None:
    gates = Gates()
    look = gated_tool(gates, "look", permission="read")
    definition = Definition("reads", tools=[look], max_concurrent_tool_calls=3)
    runner = runner_with(
        definition,
        [look],
        [reply.tool_calls(*(("look", {"name": n}) for n in "abc")), reply.text("ok")],
    )
    run = await runner.start("reads", [Message.user("go")])
    await gates.started_all("a", "b", "c")  # all three at once, none released yet
    assert gates.max_running == 3
    await gates.release("a", "b", "c")
    await run.result(timeout=WAIT)


@pytest.mark.parametrize("permission", ["write", "exec"])
async def test_c16_write_and_exec_tools_run_one_at_a_time(permission: str) -> None:
    gates = Gates()
    change = gated_tool(gates, "change", permission=permission)
    definition = Definition("writes", tools=[change], max_concurrent_tool_calls=3)
    runner = runner_with(
        definition,
        [change],
        [reply.tool_calls(*(("change", {"name": n}) for n in "abc")), reply.text("ok")],
    )
    run = await runner.start("writes", [Message.user("go")])
    for current, following in (("a", "b"), ("b", "c"), ("c", None)):
        await gates.started_all(current)
        if following is not None:
            await still_not_started(gates, following)
        await gates.release(current)
    await run.result(timeout=WAIT)
    assert gates.max_running == 1
    assert gates.started == ["a", "b", "c"]


async def test_c16_write_tool_declared_parallel_overlaps() -> None:
    gates = Gates()
    change = gated_tool(gates, "change", permission="write", execution="parallel")
    definition = Definition("par-writes", tools=[change], max_concurrent_tool_calls=3)
    runner = runner_with(
        definition,
        [change],
        [reply.tool_calls(*(("change", {"name": n}) for n in "abc")), reply.text("ok")],
    )
    run = await runner.start("par-writes", [Message.user("go")])
    await gates.started_all("a", "b", "c")
    assert gates.max_running == 3
    await gates.release("a", "b", "c")
    await run.result(timeout=WAIT)


@pytest.mark.parametrize(
    ("permission", "execution"),
    [("write", "auto"), ("exec", "sequential"), ("read", "exclusive")],
)
async def test_c16_sequential_and_exclusive_calls_are_barriers(
    permission: str, execution: str
) -> None:
    gates = Gates()
    look = gated_tool(gates, "look", permission="read")
    migrate = gated_tool(gates, "migrate", permission=permission, execution=execution)
    definition = Definition("excl", tools=[look, migrate], max_concurrent_tool_calls=4)
    runner = runner_with(
        definition,
        [look, migrate],
        [
            reply.tool_calls(
                ("look", {"name": "a"}),
                ("migrate", {"name": "x"}),
                ("look", {"name": "b"}),
            ),
            reply.text("ok"),
        ],
    )
    run = await runner.start("excl", [Message.user("go")])
    await gates.started_all("a")
    await still_not_started(gates, "x")
    assert "b" not in gates.started  # nothing after the barrier overtakes it
    await gates.release("a")
    await gates.started_all("x")
    await still_not_started(gates, "b")
    await gates.release("x")
    await gates.started_all("b")
    await gates.release("b")
    await run.result(timeout=WAIT)
    assert gates.ran_with("x") == frozenset()
    assert gates.started == ["a", "x", "b"]


def test_c16_admission_resolves_auto_scheduling_from_the_permission() -> None:
    @tool(permission="read")
    def r() -> str:
        """Read."""
        return "r"

    @tool(permission="write")
    def w() -> str:
        """Write."""
        return "w"

    @tool(permission="exec", execution="parallel", concurrency_key="box")
    def x() -> str:
        """Exec."""
        return "x"

    definition = Definition("classes", tools=[r, w, x], max_concurrent_tool_calls=5)
    machine, effects = open_round(definition, ("r", {}), ("w", {}), ("x", {}), ("w", {}))
    slots = machine.state.round.slots  # type: ignore[union-attr]
    assert [s.scheduling for s in slots] == ["parallel", "sequential", "parallel", "sequential"]
    assert slots[2].concurrency_key == "box"
    assert [e.request.call_index for e in effects] == [0]  # the write is a barrier


# --- 17: invalid arguments --------------------------------------------------------------------


@pytest.mark.parametrize("arguments", [{"count": "many"}, {}, "not json", "[1, 2]"])
async def test_c17_invalid_arguments_are_rejected_and_the_body_never_runs(arguments: Any) -> None:
    entered: list[int] = []

    @tool(permission="read")
    def count_to(count: int) -> str:
        """Count."""
        entered.append(count)
        return str(count)

    definition = Definition("args", tools=[count_to])
    runner = runner_with(
        definition, [count_to], [reply.tool_calls(("count_to", arguments)), reply.text("ok")]
    )
    run = await runner.start("args", [Message.user("go")])
    await run.result(timeout=WAIT)
    assert entered == []
    [result] = tool_results_sent(runner, 1)
    assert result.is_error and "invalid arguments" in result.content
    assert result.call_id == "call_1"
    [entry] = run.snapshot().settled_results[0].entries
    assert entry.disposition == "rejected"
    assert [p.kind for p in run.snapshot().processes] == ["interaction"]  # no child


def test_c17_invalid_arguments_never_start_a_child_in_the_pure_machine() -> None:
    @tool(permission="read")
    def count_to(count: int) -> str:
        """Count."""
        return str(count)

    definition = Definition("args", tools=[count_to], max_concurrent_tool_calls=2)
    machine, effects = open_round(
        definition, ("count_to", {"count": "x"}), ("count_to", {"count": 3})
    )
    assert [type(e) for e in effects] == [StartToolCall]
    assert effects[0].request.call_index == 1
    slots = machine.state.round.slots  # type: ignore[union-attr]
    assert slots[0].target == "none" and slots[0].disposition == "rejected"
    assert slots[0].process_id is None


# --- 18: ToolFailure ---------------------------------------------------------------------------


async def test_c18_tool_failure_is_a_model_visible_failed_result_and_never_reruns() -> None:
    entries: list[str] = []

    @tool(permission="write")
    def deploy(target: str) -> str:
        """Deploy."""
        entries.append(target)
        raise ToolFailure(f"cannot deploy {target}: quota exceeded")

    definition = Definition("fail", tools=[deploy])
    runner = runner_with(
        definition,
        [deploy],
        [reply.tool_calls(("deploy", {"target": "prod"})), reply.text("sorry")],
    )
    run = await runner.start("fail", [Message.user("go")])
    out = await run.result(timeout=WAIT)
    snap = run.snapshot()
    assert out.model_calls == 2
    assert entries == ["prod"]
    [result] = tool_results_sent(runner, 1)
    assert result.is_error and result.content == "cannot deploy prod: quota exceeded"
    assert snap.settled_results[0].entries[0].disposition == "failed"
    assert snap.unknown_effects == []


def test_c18_a_failed_call_is_not_rerun_after_restoring_either_machine() -> None:
    @tool(permission="write")
    def deploy(target: str) -> str:
        """Deploy."""
        raise ToolFailure("no")

    definition = Definition("fail", tools=[deploy])
    machine, [start] = open_round(definition, ("deploy", {"target": "prod"}))
    child = ToolCallMachine.start(start.request)
    attempt = child.next_attempt()
    assert attempt is not None and attempt.entry == 1
    failed = Failed(result=ToolResult(call_id="call_1", name="deploy", content="no", is_error=True))
    child.on_outcome(failed)
    restored_child = ToolCallMachine(
        ToolCallState.model_validate_json(child.state.model_dump_json())
    )
    assert restored_child.next_attempt() is None
    assert restored_child.outcome == failed
    assert restored_child.snapshot().unknown_effects == ()
    machine.on_call(CallSettled(effect_id=start.request.effect_id, outcome=failed))
    restored = InteractionMachine(
        definition, InteractionState.model_validate_json(machine.state.model_dump_json())
    )
    effects = restored.next_effects()
    assert [type(e) for e in effects] == [CallModel]
    assert effects[0].request.messages[-1].tool_results[0].content == "no"


# --- 19 and 20: unknown tool effects and their resolution ----------------------------------


def raiser(kind: str) -> Any:
    if kind == "exception":
        return RuntimeError("connection reset mid-write")
    return HostFailure("payment API timed out after charging")


@pytest.mark.parametrize("kind", ["exception", "host_failure"])
async def test_c19_c20_unknown_tool_effect_holds_the_round_until_the_host_resolves(
    kind: str,
) -> None:
    ran: list[str] = []

    @tool(permission="read")
    async def ok(name: str) -> str:
        """Fine."""
        ran.append(name)
        return f"ok {name}"

    @tool(permission="read")
    async def charge(amount: int) -> str:
        """Ambiguous."""
        ran.append("charge")
        raise raiser(kind)

    # every call a Tool call process (the card's mapping): the siblings' ones complete
    definition = Definition(
        "unk", tools=[ok, charge], max_concurrent_tool_calls=3, tool_call_workflows="always"
    )
    runner = runner_with(
        definition,
        [ok, charge],
        [
            reply.tool_calls(
                ("ok", {"name": "a"}), ("charge", {"amount": 5}), ("ok", {"name": "b"})
            ),
            reply.text("finished"),
        ],
    )
    run = await runner.start("unk", [Message.user("go")])
    snap = await run.idle()
    assert snap.status == "waiting"
    [unknown] = snap.unknown_effects
    assert unknown.kind == "tool"
    assert unknown.process_id == "local-1/tool/1/1"
    assert unknown.ref == "local-1/1/1"
    assert unknown.request.call.name == "charge"  # type: ignore[union-attr]
    assert ("timed out" if kind == "host_failure" else "connection reset") in unknown.diagnostic
    assert "tool.execution_failed" in unknown.diagnostic
    assert len(model_of(runner).requests) == 1  # the model waits for the host
    assert sorted(ran) == ["a", "b", "charge"]  # siblings finished
    assert snap.process("local-1/tool/1/0").status == "completed"
    assert snap.process("local-1/tool/1/2").status == "completed"
    assert snap.settled_results == []  # the round has not committed

    await asyncio.sleep(0.02)
    assert len(model_of(runner).requests) == 1

    resolved = ToolResult(call_id="call_2", name="charge", content="charged once (from ledger)")
    await run.resolve(unknown, settle_tool_result(unknown.request, resolved, "succeeded"))  # type: ignore[arg-type]
    out = await run.result(timeout=WAIT)
    assert out.text == "finished" and out.model_calls == 2
    assert [r.content for r in tool_results_sent(runner, 1)] == [
        "ok a",
        "charged once (from ledger)",
        "ok b",
    ]
    assert sorted(ran) == ["a", "b", "charge"]  # nothing settled ran again
    final = run.snapshot()
    assert final.unknown_effects == []
    assert [e.disposition for e in final.settled_results[0].entries] == ["succeeded"] * 3


async def test_c19_timeout_makes_the_call_unknown() -> None:
    @tool(permission="read", timeout=0.01)
    async def slow() -> str:
        """Too slow."""
        await asyncio.sleep(5)
        return "never"

    definition = Definition("slow", tools=[slow])
    runner = runner_with(definition, [slow], [reply.tool_calls(("slow", {})), reply.text("x")])
    run = await runner.start("slow", [Message.user("go")])
    snap = await run.idle()
    [unknown] = snap.unknown_effects
    assert unknown.kind == "tool" and "tool.timeout" in unknown.diagnostic
    assert len(model_of(runner).requests) == 1
    await run.cancel()


async def test_c20_calls_not_started_before_the_unknown_run_once_after_resolution() -> None:
    ran: list[str] = []

    @tool(permission="write")
    async def step(name: str) -> str:
        """One step."""
        ran.append(name)
        if name == "bad":
            raise RuntimeError("lost")
        return f"did {name}"

    definition = Definition("seq", tools=[step])
    runner = runner_with(
        definition,
        [step],
        [
            reply.tool_calls(
                ("step", {"name": "first"}), ("step", {"name": "bad"}), ("step", {"name": "later"})
            ),
            reply.text("done"),
        ],
    )
    run = await runner.start("seq", [Message.user("go")])
    snap = await run.idle()
    [unknown] = snap.unknown_effects
    assert ran == ["first", "bad"]  # sequential: "later" waits behind the unknown call
    failed = ToolResult(call_id="call_2", name="step", content="it did not happen", is_error=True)
    await run.resolve(unknown, settle_tool_result(unknown.request, failed, "failed"))  # type: ignore[arg-type]
    await run.result(timeout=WAIT)
    assert ran == ["first", "bad", "later"]
    assert [r.content for r in tool_results_sent(runner, 1)] == [
        "did first",
        "it did not happen",
        "did later",
    ]
    assert [e.disposition for e in run.snapshot().settled_results[0].entries] == [
        "succeeded",
        "failed",
        "succeeded",
    ]


# --- 21: settle_tool_result refuses what does not match ---------------------------------------


def unknown_tool_call(definition: Definition) -> ToolCallMachine:
    _, [start] = open_round(definition, ("act", {}))
    child = ToolCallMachine.start(start.request)
    assert child.next_attempt() is not None
    child.on_outcome(Unknown(code="tool.execution_failed", diagnostic="lost"))
    return child


@tool(permission="exec")
def act() -> str:
    """Act."""
    return "acted"


@tool(permission="read", deferred=True)
def hidden() -> str:
    """Hidden."""
    return "hidden"


def test_c21_settle_tool_result_refuses_a_mismatched_call() -> None:
    child = unknown_tool_call(Definition("d", tools=ToolSet("t", [act], deferred=[hidden])))
    request = child.snapshot().unknown_effects[0].request
    assert request.kind == "tool"
    with pytest.raises(SettlementMismatch, match="answers call"):
        settle_tool_result(
            request, ToolResult(call_id="other", name="act", content="x"), "succeeded"
        )
    with pytest.raises(SettlementMismatch):
        settle_tool_result(
            request, ToolResult(call_id="call_1", name="other", content="x"), "succeeded"
        )
    for disposition, is_error in (("succeeded", True), ("failed", False), ("rejected", False)):
        with pytest.raises(SettlementMismatch, match="disagrees"):
            settle_tool_result(
                request,
                ToolResult(call_id="call_1", name="act", content="x", is_error=is_error),
                disposition,  # type: ignore[arg-type]
            )
    failed = ToolResult(call_id="call_1", name="act", content="x", is_error=True)
    with pytest.raises(SettlementMismatch, match="advertise"):
        settle_tool_result(request, failed, "failed", advertised=["hidden"])
    with pytest.raises(SettlementMismatch):
        settle_tool_result(
            request, ToolResult(call_id="call_1", name="act", content="x"), "succeeded", ["ghost"]
        )
    with pytest.raises(SettlementMismatch):
        settle_tool_result(
            request, ToolResult(call_id="call_1", name="act", content="x"), "succeeded", ["act"]
        )
    # the matching one is accepted
    ok = settle_tool_result(
        request, ToolResult(call_id="call_1", name="act", content="x"), "succeeded", ["hidden"]
    )
    assert isinstance(ok.outcome, Succeeded) and ok.outcome.advertised == ("hidden",)
    assert child.snapshot().unknown_effects != ()


def test_c21_tool_call_machine_refuses_a_settlement_for_another_definitions_request() -> None:
    child = unknown_tool_call(Definition("d", tools=[act]))
    own = child.state.request
    before = child.state
    other_child = unknown_tool_call(Definition("other", tools=[act]))
    foreign = other_child.state.request
    assert foreign.definition == "other" and foreign.call == own.call
    result = ToolResult(call_id="call_1", name="act", content="x")
    with pytest.raises(SettlementMismatch):
        child.check_resolution(settle_tool_result(foreign, result, "succeeded"))
    with pytest.raises(SettlementMismatch):
        child.resolve(settle_tool_result(foreign, result, "succeeded"))
    altered = own.model_copy(update={"effect_id": own.effect_id + "x"})
    with pytest.raises(SettlementMismatch):
        child.resolve(settle_tool_result(altered, result, "succeeded"))
    assert child.state == before
    child.resolve(settle_tool_result(own, result, "succeeded"))
    assert child.outcome is not None and child.outcome.result.content == "x"
    with pytest.raises(SettlementMismatch):  # settled once: a second one is refused
        child.resolve(settle_tool_result(own, result, "succeeded"))


def test_c21_interaction_refuses_a_model_settlement_for_another_definition() -> None:
    mine = InteractionMachine.start(Definition("mine"), "p", [Message.user("go")])
    theirs = InteractionMachine.start(Definition("theirs"), "p", [Message.user("go")])
    for machine in (mine, theirs):
        [effect] = machine.next_effects()
        machine.on_model(ModelUnknown(effect_id=effect.request.effect_id, diagnostic="lost"))
    their_request = theirs.snapshot().unknown_effects[0].request
    assert isinstance(their_request, type(mine.snapshot().unknown_effects[0].request))
    settlement = settle_model_result(their_request, reply.text("x"), [Message.user("go")])  # type: ignore[arg-type]
    before = mine.state
    with pytest.raises(SettlementMismatch):
        mine.resolve(settlement)
    assert mine.state == before
    assert isinstance(settlement, ModelSettlement)


async def test_c21_local_run_refuses_a_mismatched_tool_settlement_and_keeps_waiting() -> None:
    @tool(permission="read")
    async def flaky() -> str:
        """Flaky."""
        raise RuntimeError("lost")

    definition = Definition("flaky", tools=[flaky])
    runner = runner_with(definition, [flaky], [reply.tool_calls(("flaky", {})), reply.text("x")])
    run = await runner.start("flaky", [Message.user("go")])
    [unknown] = (await run.idle()).unknown_effects
    request = unknown.request.model_copy(update={"definition": "someone-else"})
    result = ToolResult(call_id="call_1", name="flaky", content="x")
    with pytest.raises(SettlementMismatch):
        await run.resolve(unknown, settle_tool_result(request, result, "succeeded"))  # type: ignore[arg-type]
    snap = run.snapshot()
    assert [u.effect_id for u in snap.unknown_effects] == [unknown.effect_id]
    assert len(model_of(runner).requests) == 1
    await run.cancel()


# --- 22 and 23: direct results ---------------------------------------------------------------


def direct_tools(failing: set[str]) -> list[Any]:
    @tool(permission="read", direct_result=True)
    def quote(symbol: str) -> str:
        """A price."""
        if symbol in failing:
            raise ToolFailure(f"no price for {symbol}")
        return f"{symbol}=42"

    @tool(permission="read")
    def note(text: str) -> str:
        """An ordinary tool."""
        return f"noted {text}"

    return [quote, note]


async def test_c22_direct_result_batch_completes_without_another_model_call() -> None:
    tools = direct_tools(set())
    definition = Definition("direct", tools=tools, max_concurrent_tool_calls=2)
    runner = runner_with(
        definition,
        tools,
        [
            reply.tool_calls(("quote", {"symbol": "B"}), ("quote", {"symbol": "A"})),
            reply.text("no"),
        ],
    )
    out = await (await runner.start("direct", [Message.user("go")])).result(timeout=WAIT)
    assert out.source == "direct_tool_results"
    assert out.model_calls == 1
    assert [r.content for r in out.direct_tool_results or ()] == ["B=42", "A=42"]
    assert [r.call_id for r in out.direct_tool_results or ()] == ["call_1", "call_2"]
    assert out.text == "B=42\nA=42"
    assert len(model_of(runner).requests) == 1


@pytest.mark.parametrize("mixed", [False, True])
async def test_c22_a_failed_or_non_direct_call_sends_all_results_to_the_model(mixed: bool) -> None:
    tools = direct_tools({"BAD"})
    definition = Definition("direct", tools=tools, max_concurrent_tool_calls=2)
    second = ("note", {"text": "n"}) if mixed else ("quote", {"symbol": "BAD"})
    runner = runner_with(
        definition,
        tools,
        [reply.tool_calls(("quote", {"symbol": "A"}), second), reply.text("summary")],
    )
    out = await (await runner.start("direct", [Message.user("go")])).result(timeout=WAIT)
    assert out.source == "model_response" and out.text == "summary"
    assert out.model_calls == 2
    results = tool_results_sent(runner, 1)
    expected = ["A=42", "noted n"] if mixed else ["A=42", "no price for BAD"]
    assert [r.content for r in results] == expected


async def test_c23_direct_results_still_pass_the_completion_validator() -> None:
    seen: list[CompletionCandidate] = []

    def no_drafts(candidate: CompletionCandidate) -> CompletionDecision:
        seen.append(candidate)
        if "draft" in candidate.output_text:
            return CompletionDecision.reject("Results were drafts; confirm them.")
        return CompletionDecision.accept()

    @tool(permission="read", direct_result=True)
    def fetch(key: str) -> str:
        """Fetch."""
        return f"draft {key}"

    definition = Definition("judged", tools=[fetch], completion_validator=no_drafts)
    runner = runner_with(
        definition, [fetch], [reply.tool_calls(("fetch", {"key": "k"})), reply.text("confirmed")]
    )
    out = await (await runner.start("judged", [Message.user("go")])).result(timeout=WAIT)
    assert out.source == "model_response" and out.text == "confirmed"
    assert out.model_calls == 2
    first = seen[0]
    assert first.source == "direct_tool_results"
    assert [r.content for r in first.direct_tool_results or ()] == ["draft k"]
    last = model_of(runner).requests[1].messages[-1]
    assert last.role == "user" and last.text == "Results were drafts; confirm them."


# --- 24: deferred tools ------------------------------------------------------------------------


def advertising_tools(outcome: str) -> list[Any]:
    @tool(permission="read")
    def unlock() -> str:
        """Unlock the hidden tool."""
        advertise_tools("secret")
        if outcome == "failure":
            raise ToolFailure("unlock failed after advertising")
        if outcome == "unknown":
            raise RuntimeError("lost")
        return "unlocked"

    @tool(permission="read", deferred=True)
    def secret() -> str:
        """The hidden tool."""
        return "secret value"

    @tool(permission="read")
    def plain() -> str:
        """Ordinary."""
        return "plain"

    return [unlock, secret, plain]


async def test_c24_advertised_tool_is_visible_from_the_next_call_after_success() -> None:
    tools = advertising_tools("success")
    definition = Definition(
        "adv",
        tools=ToolSet("t", [tools[0], tools[2]], deferred=[tools[1]]),
        max_concurrent_tool_calls=2,
    )
    runner = runner_with(
        definition,
        tools,
        [
            reply.tool_calls(("unlock", {}), ("secret", {})),  # same batch: not yet bound
            reply.tool_calls(("secret", {})),
            reply.text("done"),
        ],
    )
    run = await runner.start("adv", [Message.user("go")])
    await run.result(timeout=WAIT)
    requests = model_of(runner).requests
    assert [t.name for t in requests[0].tools] == ["unlock", "plain"]
    assert [t.name for t in requests[1].tools] == ["unlock", "plain", "secret"]
    first_round = tool_results_sent(runner, 1)
    assert first_round[0].content == "unlocked"
    assert first_round[1].is_error and "not available" in first_round[1].content
    assert tool_results_sent(runner, 2)[0].content == "secret value"
    assert run.snapshot().root.advertised_tools == ("secret",)


async def test_c24_advertisement_of_a_failed_call_never_commits() -> None:
    tools = advertising_tools("failure")
    definition = Definition("adv", tools=ToolSet("t", [tools[0], tools[2]], deferred=[tools[1]]))
    runner = runner_with(
        definition,
        tools,
        [reply.tool_calls(("unlock", {})), reply.tool_calls(("secret", {})), reply.text("done")],
    )
    run = await runner.start("adv", [Message.user("go")])
    await run.result(timeout=WAIT)
    requests = model_of(runner).requests
    assert all("secret" not in [t.name for t in r.tools] for r in requests)
    assert "not available" in tool_results_sent(runner, 2)[0].content
    assert run.snapshot().root.advertised_tools == ()


@pytest.mark.parametrize("disposition", ["failed", "succeeded"])
async def test_c24_advertisement_of_an_unknown_call_commits_only_if_settled_succeeded(
    disposition: str,
) -> None:
    tools = advertising_tools("unknown")
    definition = Definition("adv", tools=ToolSet("t", [tools[0], tools[2]], deferred=[tools[1]]))
    runner = runner_with(definition, tools, [reply.tool_calls(("unlock", {})), reply.text("done")])
    run = await runner.start("adv", [Message.user("go")])
    [unknown] = (await run.idle()).unknown_effects
    failed = disposition == "failed"
    result = ToolResult(call_id="call_1", name="unlock", content="established", is_error=failed)
    advertised = () if failed else ("secret",)
    settlement = settle_tool_result(unknown.request, result, disposition, advertised)  # type: ignore[arg-type]
    await run.resolve(unknown, settlement)
    await run.result(timeout=WAIT)
    names = [t.name for t in model_of(runner).requests[1].tools]
    assert ("secret" in names) is (not failed)


@pytest.mark.parametrize("name", ["ghost", "plain"])
async def test_c24_unknown_or_non_deferred_names_are_refused(name: str) -> None:
    @tool(permission="read")
    def unlock() -> str:
        """Advertise a name that is not a deferred tool."""
        advertise_tools(name)
        return "unlocked"

    tools = advertising_tools("success")
    definition = Definition("adv", tools=ToolSet("t", [unlock, tools[2]], deferred=[tools[1]]))
    runner = runner_with(
        definition, [unlock, *tools[1:]], [reply.tool_calls(("unlock", {})), reply.text("done")]
    )
    run = await runner.start("adv", [Message.user("go")])
    await run.result(timeout=WAIT)
    [result] = tool_results_sent(runner, 1)
    assert result.is_error and name in result.content
    assert run.snapshot().settled_results[0].entries[0].disposition == "failed"
    assert run.snapshot().root.advertised_tools == ()
    assert [t.name for t in model_of(runner).requests[1].tools] == ["unlock", "plain"]


@pytest.mark.parametrize("name", ["ghost", "plain"])
def test_c24_machine_refuses_a_succeeded_outcome_advertising_a_non_deferred_name(
    name: str,
) -> None:
    tools = advertising_tools("success")
    definition = Definition("adv", tools=ToolSet("t", [tools[0], tools[2]], deferred=[tools[1]]))
    machine, [start] = open_round(definition, ("unlock", {}))
    outcome = Succeeded(
        result=ToolResult(call_id="call_1", name="unlock", content="unlocked"), advertised=(name,)
    )
    machine.on_call(CallSettled(effect_id=start.request.effect_id, outcome=outcome))
    [entry] = machine.snapshot().settled_results[0].entries
    assert entry.disposition == "failed" and entry.result.is_error
    assert machine.snapshot().advertised_tools == ()
    [call_model] = machine.next_effects()
    assert [t.name for t in call_model.request.tools] == ["unlock", "plain"]
    # a valid advertisement through the same path does commit
    machine2, [start2] = open_round(definition, ("unlock", {}))
    machine2.on_call(
        CallSettled(
            effect_id=start2.request.effect_id,
            outcome=outcome.model_copy(update={"advertised": ("secret",)}),
        )
    )
    assert machine2.snapshot().advertised_tools == ("secret",)


def test_c24_advertisable_names_travel_with_the_request() -> None:
    tools = advertising_tools("success")
    definition = Definition("adv", tools=ToolSet("t", [tools[0], tools[2]], deferred=[tools[1]]))
    _, [start] = open_round(definition, ("unlock", {}))
    assert start.request.deferred_tools == ("secret",)
    assert json.loads(start.request.model_dump_json())["deferred_tools"] == ["secret"]


# --- a tool whose own schema is invalid -------------------------------------------------------


async def test_c17_a_tool_with_an_invalid_schema_is_refused_and_never_wedges_the_loop() -> None:
    @tool(permission="read", schema={"type": "object", "properties": {"x": {"type": 5}}})
    def odd(x: int = 0) -> str:
        """Its schema passes the decorator's structural checks but is not valid JSON schema."""
        return "odd"

    with pytest.raises(DefinitionError, match="invalid JSON schema"):
        Definition("odd", tools=[odd])

    # Defence in depth: were a broken schema to reach the core anyway, the model's
    # response is consumed and the Interaction fails definitely with the schema code.
    @tool(permission="read")
    def fine(x: int = 0) -> str:
        """A valid schema."""
        return "ok"

    definition = Definition("odd", tools=[fine])
    broken = definition.tools.tools[0].model_copy(update={"parameters": odd.spec.parameters})
    object.__setattr__(definition.tools, "tools", (broken,))  # bypass: ToolSets are frozen
    machine = InteractionMachine.start(definition, "p", [Message.user("go")])
    [call_model] = machine.next_effects()
    response = reply.tool_calls((broken.name, {"x": 1}))
    machine.on_model(ModelResponded(effect_id=call_model.request.effect_id, response=response))
    assert machine.snapshot().model_calls == 1
    assert machine.next_effects() == []
    assert machine.failure is not None and machine.failure.code == "tool.schema_invalid"

"""Helpers of the tool-round tests (CONFORMANCE 13-24): gated tools whose starts, ends and
overlaps are recorded, runners with a scripted model, and a pure machine with an open round.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from scope_temporal.chat import Message, ToolResult
from scope_temporal.definition import Definition
from scope_temporal.interaction.effects import (
    CallModel,
    ModelResponded,
)
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.models import ScriptedModel, reply
from scope_temporal.testing import LocalRunner
from scope_temporal.tools import (
    tool,
)

WAIT = 2.0


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

"""The one machine style (`interaction/transitions.py`), held by every machine.

Each machine declares its legal (phase, event) pairs and their successors as data; any
other pair is refused naming both and changes nothing; a transition that ends elsewhere,
or any unexpected exception, fails the machine closed (`interaction.state.invalid`) and
it refuses further input.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

import pytest
from pydantic import BaseModel

from scope_temporal import errors
from scope_temporal.chat import Message
from scope_temporal.definition import Definition
from scope_temporal.errors import ProtocolError, ScopeError
from scope_temporal.interaction import background_task, machine, tool_call
from scope_temporal.interaction.effects import (
    CallModel,
    CallSettled,
    ModelResponded,
    StartToolCall,
)
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.interaction.state import Phase as InteractionPhase
from scope_temporal.interaction.task_values import Phase as TaskPhase
from scope_temporal.interaction.tool_call import ToolCallMachine, ToolCallPhase
from scope_temporal.interaction.transitions import Machine
from scope_temporal.models import reply
from scope_temporal.tools import InputRequired, Succeeded, tool

MACHINES = [
    ("interaction", machine.TABLE, machine.Event, InteractionPhase),
    ("tool_call", tool_call.TABLE, tool_call.Event, ToolCallPhase),
    ("background_task", background_task.TABLE, background_task.Event, TaskPhase),
]


@tool(permission="write")
def act() -> str:
    """Act."""
    return "acted"


@pytest.mark.parametrize(("name", "table", "events", "phases"), MACHINES, ids=lambda m: m)
def test_each_table_declares_every_event_over_declared_phases(
    name: str, table: Any, events: Any, phases: Any
) -> None:
    assert set(table) == set(get_args(events)), name
    known = set(get_args(phases))
    for event, rows in table.items():
        assert rows, f"{name}: {event} is legal nowhere"
        for phase, successors in rows.items():
            assert phase in known and successors <= known, (name, event, phase)


def interaction_in_round() -> InteractionMachine:
    definition = Definition("style", tools=[act], tool_call_workflows="always")
    m = InteractionMachine.start(definition, "root", [Message.user("go")])
    [call] = m.next_effects()
    assert isinstance(call, CallModel)
    m.on_model(
        ModelResponded(effect_id=call.request.effect_id, response=reply.tool_calls(("act", {})))
    )
    return m


def test_an_interaction_refuses_a_pair_outside_its_table_naming_both() -> None:
    m = interaction_in_round()
    before = m.state
    with pytest.raises(ProtocolError, match="model_settled is not legal in phase round"):
        m.on_model(ModelResponded(effect_id="root/model/1", response=reply.text("late")))
    assert m.state == before


def tool_call_machine() -> ToolCallMachine:
    [start] = interaction_in_round().next_effects()
    assert isinstance(start, StartToolCall)
    return ToolCallMachine.start(start.request)


def test_a_tool_call_refuses_a_pair_outside_its_table_naming_both() -> None:
    m = tool_call_machine()
    before = m.state
    with pytest.raises(ProtocolError, match="outcome is not legal in phase ready"):
        m.on_outcome(InputRequired(prompt="?", response_schema={}))
    assert m.state == before


def test_a_tool_call_fails_closed_and_refuses_further_input() -> None:
    m = tool_call_machine()
    m.next_attempt()
    with pytest.raises(ProtocolError) as crashed:
        m.on_outcome(InputRequired.model_construct(kind="input_required"))  # unreadable
    assert crashed.value.code == errors.STATE_INVALID
    assert m.status == "failed" and m.failure is not None
    assert m.failure.code == errors.STATE_INVALID
    assert m.snapshot().status == "failed"
    with pytest.raises(ProtocolError, match="not legal in phase failed"):
        m.on_outcome(InputRequired(prompt="?", response_schema={}))
    m.resume()  # pause and resume stay legal (no-ops); an ended call takes no new work
    assert m.next_attempt() is None


def test_an_interaction_fails_closed_and_refuses_further_input() -> None:
    m = interaction_in_round()
    [start] = m.next_effects()
    assert isinstance(start, StartToolCall)
    broken = CallSettled.model_construct(
        effect_id=start.request.effect_id, outcome=Succeeded.model_construct(kind="succeeded")
    )
    with pytest.raises(ProtocolError) as crashed:
        m.on_call(broken)  # a settlement without a result: a bug, never half-applied
    assert crashed.value.code == errors.STATE_INVALID
    assert m.done and m.status == "failed"
    assert m.failure is not None and m.failure.code == errors.STATE_INVALID
    with pytest.raises(ProtocolError, match="has ended"):
        m.on_call(broken)
    assert m.next_effects() == []


class _Toy(BaseModel):
    phase: Literal["on", "off"] = "on"


class _ToyMachine(Machine[_Toy, Literal["on", "off"], Literal["flip"]]):
    """A machine whose `flip` is declared to stay `on` but turns it `off`: a bug."""

    TABLE = {"flip": {"on": frozenset({"on"})}}

    @staticmethod
    def _phase(state: _Toy) -> Literal["on", "off"]:
        return state.phase

    def _refusal(self, event: Literal["flip"], phase: Literal["on", "off"]) -> ScopeError:
        return ProtocolError(f"{event} in {phase}")

    @staticmethod
    def _crash(state: _Toy, message: str) -> None:
        state.phase = "off"

    def flip(self) -> None:
        self._apply("flip", lambda s: setattr(s, "phase", "off"))


def test_a_transition_to_an_undeclared_phase_fails_the_machine_closed() -> None:
    toy = _ToyMachine(_Toy())
    with pytest.raises(ProtocolError, match="flip in phase on led to off") as crashed:
        toy.flip()
    assert crashed.value.code == errors.STATE_INVALID
    with pytest.raises(ProtocolError, match="flip in off"):
        toy.flip()

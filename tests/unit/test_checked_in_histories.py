"""CONFORMANCE 42, offline: histories checked into tests/histories replay with today's code.

They hold an input wait, a steer, and an unknown tool effect resolved by the host; a
change that would break running Interactions fails here, without any server. A changed
Definition must fail *as such* (`interaction.definition.changed`), not just somehow.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.workflow import NondeterminismError

from scope_temporal import Definition, ScopeError
from scope_temporal.testing.replay import replay_history
from tests.histories.agents import DEFINITIONS

HISTORIES = sorted((Path(__file__).parents[1] / "histories").glob("*.json"))


def history_named(stem: str) -> Path:
    [path] = [p for p in HISTORIES if p.stem == stem]
    return path


def load(path: Path) -> WorkflowHistory:
    return WorkflowHistory.from_json(path.stem, path.read_text())


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
async def test_c42_checked_in_history_replays(path: Path) -> None:
    result = await replay_history(load(path), DEFINITIONS)
    assert result.replay_failure is None


async def test_c42_a_changed_definition_is_caught_by_replay() -> None:
    changed = Definition(
        "recorded",
        instructions="You fix services, differently.",
        tools=DEFINITIONS[0].tools,
        max_concurrent_tool_calls=2,
    )
    result = await replay_history(load(history_named("recorded")), [changed])
    failure = result.replay_failure
    assert isinstance(failure, ScopeError), repr(failure)
    assert failure.code == "interaction.definition.changed"
    assert "Definition 'recorded' changed while this Interaction ran" in failure.message
    assert isinstance(failure.__cause__, NondeterminismError)


async def test_c42_a_replay_failure_of_another_cause_is_reported_as_temporal_gives_it() -> None:
    # a history this code cannot have produced: a ToolCall's first events spliced in front
    # of the Interaction's; the replay fails, but not with one of our codes
    history = load(history_named("recorded"))
    tool_history = load(history_named("recorded_tool_2_0"))
    mixed = WorkflowHistory(history.workflow_id, [*tool_history.events[:3], *history.events[3:]])
    result = await replay_history(mixed, DEFINITIONS)
    assert result.replay_failure is not None
    assert not isinstance(result.replay_failure, ScopeError)


def test_histories_are_present() -> None:
    assert sorted(p.stem for p in HISTORIES) == [
        "recorded",
        "recorded-on-demand",
        # on_demand: only the calls that needed a life of their own (the approval wait,
        # the unknown outcome) became ToolCall workflows
        "recorded-on-demand_tool_1_1",
        "recorded-on-demand_tool_2_0",
        "recorded_tool_1_0",
        "recorded_tool_1_1",
        "recorded_tool_2_0",
    ]

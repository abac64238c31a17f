"""What `replay-check` selects: root Interactions by its filters, then their whole trees."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from scope_temporal.testing.replay_recent import RunSelection


def test_by_default_the_most_recent_root_interactions_of_any_status() -> None:
    selection = RunSelection()
    assert selection.limit == 20
    assert selection.roots_query() == (
        "WorkflowType = 'scope.Interaction' AND ParentWorkflowId IS NULL"
    )


def test_every_filter_narrows_the_roots() -> None:
    selection = RunSelection(
        definitions=("ops", "support"),
        task_queue="agents",
        running_only=True,
        query="StartTime > '2026-01-01T00:00:00Z'",
    )
    assert selection.roots_query() == (
        "WorkflowType = 'scope.Interaction' AND ParentWorkflowId IS NULL"
        " AND ScopeDefinition IN ('ops', 'support') AND TaskQueue = 'agents'"
        " AND ExecutionStatus = 'Running' AND (StartTime > '2026-01-01T00:00:00Z')"
    )


def test_trees_hold_every_scope_workflow_and_running_only_applies_to_them_too() -> None:
    tree = RunSelection(running_only=True).tree_query(["a", "b"])
    assert tree == (
        "RootWorkflowId IN ('a', 'b') AND WorkflowType IN "
        "('scope.Interaction', 'scope.ToolCall', 'scope.BackgroundTask')"
        " AND ExecutionStatus = 'Running'"
    )
    assert "ExecutionStatus" not in RunSelection().tree_query(["a"])


def test_names_with_quotes_are_quoted_the_other_way_and_a_limit_is_positive() -> None:
    assert 'TaskQueue = "it\'s"' in RunSelection(task_queue="it's").roots_query()
    with pytest.raises(ValueError, match="both kinds of quotes"):
        RunSelection(task_queue="'\"").roots_query()
    with pytest.raises(ValidationError):
        RunSelection(limit=0)

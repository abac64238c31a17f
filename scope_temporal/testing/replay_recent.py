"""Replay recent histories from a server against today's code and Definitions: the check a
team runs in CI before deploying (`scope-temporal replay-check`).

`find_runs` picks root Interactions by a `RunSelection` (Definition, task queue, running
only, the N most recent, a visibility query) and returns every workflow run of their trees:
the Interactions themselves and each earlier run of one that continued-as-new, their
ToolCall children, delegates and background tasks. `replay_run` replays one of them with
`replay_history` and says whether today's code would continue it as recorded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from temporalio.client import Client, WorkflowExecution
from temporalio.converter import DataConverter

from scope_temporal import names
from scope_temporal.converter import is_decode_failure
from scope_temporal.definition import Definition
from scope_temporal.errors import ScopeError
from scope_temporal.testing.replay import replay_history

SCOPE_WORKFLOWS = (names.INTERACTION_WORKFLOW, names.TOOL_CALL_WORKFLOW, names.TASK_WORKFLOW)
"""The workflow types a tree is replayed for; other types (not ours) are left out."""

REPLAY_DEADLINE_SECONDS = 60.0
"""How long one replay may take before the run counts as not checked."""

_IDS_PER_QUERY = 50
_DETAIL_CHARS = 300


class RunSelection(BaseModel):
    """Which Interactions to replay, with their trees. Every filter narrows the selection.

    Only root Interactions are selected (their delegates, ToolCalls and background tasks
    follow them); a Definition filter reads the `ScopeDefinition` search attribute, which
    clients set only where it is registered.
    """

    model_config = ConfigDict(frozen=True)

    definitions: tuple[str, ...] = ()
    """Only Interactions of these Definitions (none: every Definition)."""
    task_queue: str | None = None
    """Only Interactions started on this task queue (None: any)."""
    running_only: bool = False
    """Only running workflows: what a deploy would make continue on the new code."""
    limit: int = Field(default=20, ge=1)
    """The most recent this many Interactions (by start time)."""
    query: str | None = None
    """An extra Temporal visibility filter on the Interactions, e.g. `StartTime > '...'`."""

    def roots_query(self) -> str:
        """The visibility query selecting the root Interactions."""
        clauses = [f"WorkflowType = '{names.INTERACTION_WORKFLOW}'", "ParentWorkflowId IS NULL"]
        if self.definitions:
            clauses.append(f"{names.DEFINITION_ATTRIBUTE.name} IN ({_quoted(self.definitions)})")
        if self.task_queue is not None:
            clauses.append(f"TaskQueue = {_quote(self.task_queue)}")
        if self.running_only:
            clauses.append("ExecutionStatus = 'Running'")
        if self.query:
            clauses.append(f"({self.query})")
        return " AND ".join(clauses)

    def tree_query(self, root_ids: Sequence[str]) -> str:
        """The visibility query selecting every workflow of these roots' trees."""
        clauses = [
            f"RootWorkflowId IN ({_quoted(root_ids)})",
            f"WorkflowType IN ({_quoted(SCOPE_WORKFLOWS)})",
        ]
        if self.running_only:
            clauses.append("ExecutionStatus = 'Running'")
        return " AND ".join(clauses)


ReplayOutcome = Literal["replayed", "diverged", "undecodable", "timed_out"]
"""`replayed`: today's code continues the run exactly as recorded. `diverged`: it would
not (a changed Definition, non-deterministic code). `undecodable`: not checked, its
payloads need a codec the replay was not given. `timed_out`: not checked in time."""


class ReplayedRun(BaseModel):
    """One workflow run and what replaying it with today's code gave."""

    model_config = ConfigDict(frozen=True)

    workflow_id: str
    run_id: str
    workflow_type: str
    status: str
    """The run's status on the server: running, completed, failed, continued_as_new, ..."""
    definition: str | None = None
    """The Definition an Interaction runs (its `ScopeDefinition`), where recorded."""
    outcome: ReplayOutcome
    code: str | None = None
    """A divergence's code where scope-temporal classified it, e.g.
    `interaction.definition.changed`; None for Temporal's own (non-determinism) errors."""
    detail: str | None = None
    """What went wrong, for a person (one line); None when it replayed."""

    @property
    def ok(self) -> bool:
        """True when today's code replays the run exactly as it was recorded."""
        return self.outcome == "replayed"


async def find_runs(client: Client, selection: RunSelection) -> list[WorkflowExecution]:
    """Every workflow run of the selected Interactions' trees: each tree's runs together,
    the newest Interaction first, its own runs and then its descendants by id.

    Raises:
        temporalio.service.RPCError: the server refused a query (e.g. a search attribute
            it does not know).
    """
    roots: list[str] = []
    async for execution in client.list_workflows(selection.roots_query()):
        if execution.id not in roots:
            roots.append(execution.id)
            if len(roots) == selection.limit:
                break
    found: list[WorkflowExecution] = []
    for start in range(0, len(roots), _IDS_PER_QUERY):
        query = selection.tree_query(roots[start : start + _IDS_PER_QUERY])
        found += [execution async for execution in client.list_workflows(query)]
    order = {root: index for index, root in enumerate(roots)}

    def position(execution: WorkflowExecution) -> tuple[int, bool, str, float]:
        root = execution.root_id or execution.id
        is_child = execution.id != root
        return order.get(root, len(order)), is_child, execution.id, execution.start_time.timestamp()

    return sorted(found, key=position)


async def replay_run(
    client: Client,
    execution: WorkflowExecution,
    definitions: Iterable[Definition],
    *,
    data_converter: DataConverter | None = None,
) -> ReplayedRun:
    """Fetch one run's history and replay it with these Definitions registered.

    Args:
        client: where the history is read from (read only: nothing is started or changed).
        execution: a run `find_runs` returned.
        definitions: today's Definitions (those the new workers will serve).
        data_converter: the workers' converter when it carries a payload codec (e.g.
            encryption); histories are decoded with it.

    Never raises for a divergence: it is in the result (`outcome`, `code`, `detail`).
    """
    history = await client.get_workflow_handle(
        execution.id, run_id=execution.run_id
    ).fetch_history()
    try:
        result = await asyncio.wait_for(
            replay_history(history, definitions, data_converter=data_converter),
            REPLAY_DEADLINE_SECONDS,
        )
    except TimeoutError:
        detail = f"the replay took over {REPLAY_DEADLINE_SECONDS:g} s"
        return _replayed(execution, "timed_out", detail=detail)
    failure = result.replay_failure
    if failure is None:
        return _replayed(execution, "replayed")
    if isinstance(failure, ScopeError):
        return _replayed(execution, "diverged", code=failure.code, detail=failure.message)
    if is_decode_failure(failure):
        detail = "its payloads need a payload codec (e.g. encryption) this replay was not given"
        return _replayed(execution, "undecodable", detail=detail)
    lines = str(failure).strip().splitlines() or [""]
    first = lines[0] if len(lines[0]) <= _DETAIL_CHARS else lines[0][:_DETAIL_CHARS] + "…"
    return _replayed(execution, "diverged", detail=f"{type(failure).__name__}: {first}")


def _replayed(
    execution: WorkflowExecution,
    outcome: ReplayOutcome,
    *,
    code: str | None = None,
    detail: str | None = None,
) -> ReplayedRun:
    return ReplayedRun(
        workflow_id=execution.id,
        run_id=execution.run_id,
        workflow_type=execution.workflow_type,
        status=execution.status.name.lower() if execution.status else "unknown",
        definition=execution.typed_search_attributes.get(names.DEFINITION_ATTRIBUTE),
        outcome=outcome,
        code=code,
        detail=detail,
    )


def _quote(value: str) -> str:
    """A visibility-query string literal."""
    if "'" not in value:
        return f"'{value}'"
    if '"' not in value:
        return f'"{value}"'
    raise ValueError(f"{value!r} holds both kinds of quotes; a visibility query cannot name it")


def _quoted(values: Iterable[str]) -> str:
    return ", ".join(_quote(v) for v in values)


__all__ = [
    "REPLAY_DEADLINE_SECONDS",
    "SCOPE_WORKFLOWS",
    "ReplayOutcome",
    "ReplayedRun",
    "RunSelection",
    "find_runs",
    "replay_run",
]

"""Unknown Effects opened and settled. Everything here runs inside the workflow.

Only a workflow sees every unknown (an activity that timed out, a worker that was lost),
and only a workflow accepts a host's settlement, so these two counters are recorded
there, through `workflow.metric_meter()`, which records nothing while replaying: a
replayed history never counts twice. The workflows make one call per event; a task queue
whose `ScopeWorker` has `metrics=False` (the default) returns at once.
"""

from __future__ import annotations

from typing import Literal, Protocol

from temporalio import workflow
from temporalio.common import MetricCounter

from scope_temporal.interaction.effects import ModelResend, ModelSettlement, ToolSettlement
from scope_temporal.telemetry.conventions import UNKNOWNS_OPENED, UNKNOWNS_SETTLED
from scope_temporal.telemetry.instruments import Bound

_COUNTING: set[str] = set()
"""Task queues served with `metrics=True` in this process."""


class _Request(Protocol):
    @property
    def kind(self) -> Literal["model", "tool"]: ...
    @property
    def definition(self) -> str: ...


class _Outcome(Protocol):
    @property
    def kind(self) -> str: ...


def count_on(task_queue: str, counting: bool) -> None:
    """Turn the counters on or off for the workflows of `task_queue` (the worker does)."""
    if counting:
        _COUNTING.add(task_queue)
    else:
        _COUNTING.discard(task_queue)


def record_outcome(request: _Request, outcome: _Outcome) -> None:
    """Count an unknown opened, if `outcome` (of the Effect `request`) is unknown."""
    if outcome.kind == "unknown" and workflow.info().task_queue in _COUNTING:
        _add(UNKNOWNS_OPENED, {"definition": request.definition, "kind": request.kind})


def record_settlement(settlement: ModelSettlement | ModelResend | ToolSettlement) -> None:
    """Count an unknown a host settled, or sent again (disposition `resent`); call it once
    the settlement is accepted."""
    if workflow.info().task_queue not in _COUNTING:
        return
    disposition = "succeeded"
    if isinstance(settlement, ToolSettlement):
        disposition = settlement.outcome.kind
    elif isinstance(settlement, ModelResend):
        disposition = "resent"
    _add(
        UNKNOWNS_SETTLED,
        {
            "definition": settlement.request.definition,
            "kind": settlement.request.kind,
            "disposition": disposition,
        },
    )


_COUNTERS: dict[tuple[str, str, str, str], Bound[MetricCounter]] = {}
"""By namespace, task queue, workflow type (the workflow meter's own attributes) and name.
A counter made in one workflow serves the others of its kind: it checks for replay when it
is used, in the workflow that uses it."""


def _add(name: str, attributes: dict[str, str]) -> None:
    info = workflow.info()
    key = (info.namespace, info.task_queue, info.workflow_type, name)
    counter = _COUNTERS.get(key)
    if counter is None:
        counter = _COUNTERS[key] = Bound(workflow.metric_meter().create_counter(name))
    counter.at(**attributes).add(1)

"""Definitions registered by workers, found by the workflows by task queue and name.

This module is passed through the workflow sandbox (see `worker.py`), so a workflow sees
the very Definition objects the worker registered; they hold only frozen specs and pure
functions, so reading them is deterministic.
"""

from __future__ import annotations

from scope_temporal.definition import Definition
from scope_temporal.errors import DefinitionError

_definitions: dict[str, dict[str, Definition]] = {}


def register(task_queue: str, definitions: list[Definition]) -> None:
    """Register a worker's Definitions for its task queue (the latest worker's set wins).

    A changed declaration under a name that running Interactions use is caught by the
    workflow itself (`interaction.definition.changed`), not here.

    Raises:
        DefinitionError: two of the given Definitions share one name.
    """
    names = [d.name for d in definitions]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise DefinitionError(f"Two Definitions share each of the names {duplicates}.")
    _definitions[task_queue] = {d.name: d for d in definitions}


REPLAY_QUEUE = "*"
"""Definitions registered here serve any task queue: what `Replayer` runs need."""


def lookup(task_queue: str, name: str) -> Definition | None:
    found = _definitions.get(task_queue, {}).get(name)
    return found if found is not None else _definitions.get(REPLAY_QUEUE, {}).get(name)


def registered(task_queue: str) -> list[Definition]:
    """The Definitions a worker registered for `task_queue` in this process."""
    return list(_definitions.get(task_queue, {}).values())


def names(task_queue: str) -> list[str]:
    return sorted(_definitions.get(task_queue, {}))

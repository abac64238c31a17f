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
    """Register a worker's Definitions for its task queue.

    Raises:
        DefinitionError: two Definitions with one name, or a different declaration under a
            name already registered on this task queue in this process.
    """
    known = _definitions.setdefault(task_queue, {})
    names = [d.name for d in definitions]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise DefinitionError(f"Two Definitions share each of the names {duplicates}.")
    for definition in definitions:
        existing = known.get(definition.name)
        if existing is not None and existing.digest != definition.digest:
            raise DefinitionError(
                f"Task queue {task_queue!r} already serves a different Definition "
                f"{definition.name!r} in this process."
            )
    known.update({d.name: d for d in definitions})


def lookup(task_queue: str, name: str) -> Definition | None:
    return _definitions.get(task_queue, {}).get(name)


def names(task_queue: str) -> list[str]:
    return sorted(_definitions.get(task_queue, {}))

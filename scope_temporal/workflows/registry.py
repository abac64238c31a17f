"""Definitions registered by workers, found by the workflows by task queue and name.

The workflows run unsandboxed in the worker's process (see `workflows/interaction.py`),
so a workflow sees the very Definition objects the worker registered; they hold only
frozen specs and pure functions, so reading them is deterministic.
"""

from __future__ import annotations

from scope_temporal.definition import Definition
from scope_temporal.errors import DefinitionError
from scope_temporal.payload_limits import DEFAULT_PAYLOAD_LIMIT_BYTES

_definitions: dict[str, dict[str, Definition]] = {}
_payload_limits: dict[str, int] = {}


def register(
    task_queue: str, definitions: list[Definition], *, payload_limit: int | None = None
) -> None:
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
    if payload_limit is not None:
        _payload_limits[task_queue] = payload_limit


REPLAY_QUEUE = "*"
"""Definitions registered here serve any task queue: what `Replayer` runs need."""


def lookup(task_queue: str, name: str) -> Definition | None:
    found = _definitions.get(task_queue, {}).get(name)
    return found if found is not None else _definitions.get(REPLAY_QUEUE, {}).get(name)


def payload_limit(task_queue: str) -> int:
    """The payload limit the worker serving `task_queue` configured."""
    found = _payload_limits.get(task_queue)
    if found is None:
        found = _payload_limits.get(REPLAY_QUEUE, DEFAULT_PAYLOAD_LIMIT_BYTES)
    return found


def registered(task_queue: str) -> list[Definition]:
    """The Definitions a worker registered for `task_queue` in this process."""
    return list(_definitions.get(task_queue, {}).values())


def names(task_queue: str) -> list[str]:
    return sorted(_definitions.get(task_queue, {}))

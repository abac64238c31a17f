"""What one worker serves: its Definitions by name, and its payload limit.

An object, owned by whoever serves: `ScopeWorker` builds one and hands it to its
activities and (through `workflows.serving`) to its workflows; `replay_history` builds
one for the Replayer; `LocalRunner` holds one. Two workers in one process never see each
other's Definitions.

A Definition holds only frozen specs and pure functions, so reading one is
deterministic (its digest is recorded in history and checked on replay).
"""

from __future__ import annotations

from collections.abc import Iterable

from scope_temporal.definition import Definition
from scope_temporal.errors import DefinitionError
from scope_temporal.payload_limits import DEFAULT_PAYLOAD_LIMIT_BYTES, ResponseLimit


class Registry:
    """The Definitions one worker serves, and the largest payload it accepts.

    Args:
        definitions: every Definition served, delegates' included.
        payload_limit: the largest payload (bytes of JSON) the framework creates or
            accepts; see `scope_temporal.payload_limits`.
        task_history_events: a background task started here continues as new before
            its run's history passes this many events (None: 2,000).

    Raises:
        DefinitionError: two of the Definitions share one name, or one's
            `max_response_bytes` is over `payload_limit`.
    """

    def __init__(
        self,
        definitions: Iterable[Definition] = (),
        *,
        payload_limit: int = DEFAULT_PAYLOAD_LIMIT_BYTES,
        task_history_events: int | None = None,
    ) -> None:
        listed = list(definitions)
        names = [d.name for d in listed]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise DefinitionError(f"Two Definitions share each of the names {duplicates}.")
        for d in listed:
            if d.max_response_bytes is not None and d.max_response_bytes > payload_limit:
                raise DefinitionError(
                    f"Definition {d.name!r}: max_response_bytes={d.max_response_bytes:,} is "
                    f"over the worker's payload limit of {payload_limit:,} bytes, which bounds "
                    "every response already; lower it, or raise payload_limit_bytes."
                )
        self._definitions = {d.name: d for d in listed}
        self.payload_limit = payload_limit
        self.task_history_events = task_history_events
        """The history bound of the background tasks started here (None: the default)."""

    @property
    def definitions(self) -> tuple[Definition, ...]:
        """Every Definition served, in registration order."""
        return tuple(self._definitions.values())

    @property
    def names(self) -> list[str]:
        return sorted(self._definitions)

    def lookup(self, name: str) -> Definition | None:
        return self._definitions.get(name)

    def response_limit(self, definition: str) -> ResponseLimit:
        """What bounds a model response or tool outcome of `definition`'s calls: its
        `max_response_bytes` if set (never over the payload limit), else the payload limit."""
        found = self._definitions.get(definition)
        if found is None or found.max_response_bytes is None:
            return ResponseLimit(self.payload_limit, "the payload limit")
        bound = f"the response bound of Definition {definition!r} (max_response_bytes)"
        return ResponseLimit(found.max_response_bytes, bound)

    def __repr__(self) -> str:
        return f"Registry({self.names}, payload_limit={self.payload_limit})"


__all__ = ["Registry"]

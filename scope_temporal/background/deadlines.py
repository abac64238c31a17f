"""A background call's operation deadline: from the tool's optional, pure
`operation_timeout(arguments)`, fixed when the call is made, and kept by every attempt.

Only attempts use it (activity code: the wall clock is fine there); the task's workflow
just carries it in the launch.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from scope_temporal.background.protocols import RunOutcome
from scope_temporal.errors import DefinitionError


def deadline_after(timeout: timedelta | float | None, tool: str) -> datetime | None:
    """The deadline of an operation that may take `timeout` from now (None: no limit).

    Raises:
        DefinitionError: `timeout` is not a positive duration (a bug in the tool).
    """
    if timeout is None:
        return None
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else timeout
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0:
        raise DefinitionError(
            f"tool {tool!r}: operation_timeout(arguments) returned {timeout!r}; return a "
            "positive number of seconds, a timedelta, or None"
        )
    return datetime.now(UTC) + timedelta(seconds=seconds)


def remaining(deadline: datetime | None) -> float | None:
    """Seconds left until `deadline` (0 when past), or None without one."""
    if deadline is None:
        return None
    return max((deadline - datetime.now(UTC)).total_seconds(), 0.0)


def timed_out(outcome: RunOutcome | None) -> str:
    """The error of a run stopped at its deadline (`outcome`: how it confirmed, if it did)."""
    confirmed = "it stopped" if outcome is not None else "it did not confirm the stop"
    return (
        f"the operation reached its timeout (operation_timeout of its arguments) and was "
        f"stopped; {confirmed}"
    )


def timeout_of(impl: Any, arguments: Any) -> timedelta | float | None:
    """`impl.operation_timeout(arguments)`, or None when the tool has no such method."""
    method = getattr(impl, "operation_timeout", None)
    return None if method is None else method(arguments)


__all__ = ["deadline_after", "remaining", "timed_out", "timeout_of"]

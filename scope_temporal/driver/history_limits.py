"""Whether a run that cannot carry its state into a new run may go on (pure).

An Interaction continues as new at a round boundary when Temporal suggests it (about 4K
events or 4 MB of history) or every `continue_as_new_every` model calls, carrying its
whole state (the conversation included) as the next run's input. Without external
storage that input must fit under the payload limit; once the conversation outgrows it
the run cannot carry it, and its history keeps growing one round at a time. Temporal
terminates a workflow whose history reaches 51,200 events or 50 MB; a terminated
Interaction ends with no failure of ours and nothing a host can act on. So a run that
cannot carry goes on only while its history stays under half of those limits, and then
fails with `interaction.state.too_large`, which names the fix: configure storage= on the
worker and its clients, so the state goes to the store and only a reference to history.
A host's `continue_as_new_every` is checked here too (`check_continue_as_new_every`).
"""

from __future__ import annotations

import dataclasses

from scope_temporal.errors import ConfigurationError

HISTORY_EVENTS_FAIL_AT = 25_600
"""Half of Temporal's 51,200-event history limit."""

HISTORY_BYTES_FAIL_AT = 25 * 1024 * 1024
"""Half of Temporal's 50 MiB history size limit."""


@dataclasses.dataclass(frozen=True)
class HistoryUsage:
    """How big the current run's history is, as the engine counts it."""

    events: int
    bytes: int


NO_HISTORY = HistoryUsage(events=0, bytes=0)
"""An engine that keeps no history (in-process runs)."""


@dataclasses.dataclass(frozen=True)
class CarryRefused:
    """The state did not fit in the next run's input: go on, or fail with `message`."""

    fail: bool
    message: str


def refuse_carry(state_bytes: int, limit: int, usage: HistoryUsage) -> CarryRefused:
    """What a run does when its state (`state_bytes`) is over the payload `limit`."""
    fix = (
        "configure storage= on the worker and its clients (e.g. DirectoryStorage on one "
        "machine, S3StorageDriver on a cluster; `scope-temporal worker --storage`) so "
        "the state is offloaded and only a reference stays in history"
    )
    fail = usage.events >= HISTORY_EVENTS_FAIL_AT or usage.bytes >= HISTORY_BYTES_FAIL_AT
    if not fail:
        return CarryRefused(
            fail=False,
            message=(
                f"not continuing as new: the state is {state_bytes:,} bytes, over the "
                f"payload limit of {limit:,}; this run's history keeps growing "
                f"({usage.events:,} events, {usage.bytes:,} bytes; the Interaction fails "
                f"at {HISTORY_EVENTS_FAIL_AT:,} events or {HISTORY_BYTES_FAIL_AT:,} "
                f"bytes): {fix}"
            ),
        )
    return CarryRefused(
        fail=True,
        message=(
            f"The Interaction's state is {state_bytes:,} bytes, over the payload limit of "
            f"{limit:,}, so it cannot continue as new, and this run's history "
            f"({usage.events:,} events, {usage.bytes:,} bytes) has reached half of "
            f"Temporal's limits (51,200 events, 50 MB), where the server would terminate "
            f"it: {fix}. Start it again once storage is configured."
        ),
    )


def check_continue_as_new_every(every: int | None, what: str) -> None:
    """Refuse a `continue_as_new_every` below 1 (None: not set).

    Raises:
        ConfigurationError: naming `what` and the value; nothing was started.
    """
    if every is not None and (type(every) is not int or every < 1):
        raise ConfigurationError(
            f"{what}: continue_as_new_every must be an int of at least 1 (or not given), "
            f"not {every!r}; nothing was started. It counts what runs before the next "
            "run: below 1, a run would continue as new before doing anything."
        )


__all__ = [
    "HISTORY_BYTES_FAIL_AT",
    "HISTORY_EVENTS_FAIL_AT",
    "NO_HISTORY",
    "CarryRefused",
    "HistoryUsage",
    "check_continue_as_new_every",
    "refuse_carry",
]

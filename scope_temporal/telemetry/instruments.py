"""Metric instruments bound to one attribute set each, made once and kept.

Attributes passed to each `add` are converted into a new attribute set every time; bound
once, each set is converted once and keeps one identity. The identity matters to
`temporalio.contrib.opentelemetry.MetricsExporter`, which caches by `id()` of the buffer's
objects (a freed set's id, reused by another, files values under stale attributes; see
docs/known-gaps.md: Temporal's own metrics can still mislead it).
"""

from __future__ import annotations

from typing import Generic, TypeVar

from temporalio.common import MetricCommon

M = TypeVar("M", bound=MetricCommon)


class Bound(Generic[M]):
    """One instrument, and its copies bound to each attribute set asked for so far."""

    def __init__(self, instrument: M) -> None:
        self._instrument = instrument
        self._bound: dict[tuple[tuple[str, str], ...], M] = {}

    def at(self, **attributes: str) -> M:
        """The instrument bound to `attributes` (made on first use, then kept)."""
        key = tuple(sorted(attributes.items()))
        bound = self._bound.get(key)
        if bound is None:
            bound = self._bound[key] = self._instrument.with_additional_attributes(dict(key))
        return bound

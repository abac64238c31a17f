"""Metric instruments bound to one attribute set each, made once and kept.

Temporal's `MetricBuffer` (read by `temporalio.contrib.opentelemetry.MetricsExporter`)
tells attribute sets apart by the identity of their objects. Attributes passed to each
`add` are a new object every time, whose identity a later set may reuse once it is freed,
and the exporter then files the later values under the earlier attributes (seen: settled
unknowns counted as opened). Bound once and kept, every set keeps one identity; it is also
cheaper.
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

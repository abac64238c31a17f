"""Tracing and metrics, both opt-in (`ScopeWorker(tracing=..., metrics=...)`,
`ScopeClient(tracing=...)`); off, nothing here is installed or runs.

- `conventions`: metric names, span names and attributes.
- `install`: what `ScopeWorker` adds for each option.
- `activity_hook`, `facts`: where the model and tool activities are observed, and what a
  call did (shared by spans and metrics).
- `metrics`, `instruments`: the activity-side counters and the model-latency histogram.
- `workflow_counters`: unknowns opened and settled (workflow side).
- `tracing`, `spans`, `workflow_spans`: OpenTelemetry (the `scope-temporal[otel]` extra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scope_temporal.telemetry.conventions import (
    MODEL_CALLS,
    MODEL_LATENCY,
    MODEL_TOKENS,
    TOOL_CALLS,
    UNKNOWNS_OPENED,
    UNKNOWNS_SETTLED,
    Outcome,
)

if TYPE_CHECKING:  # the real function for type checkers; at run time see __getattr__
    from scope_temporal.telemetry.tracing import configure_tracing


def __getattr__(name: str) -> object:
    if name == "configure_tracing":  # imports OpenTelemetry only when asked for
        from scope_temporal.telemetry.tracing import configure_tracing

        return configure_tracing
    raise AttributeError(f"module 'scope_temporal.telemetry' has no attribute {name!r}")


__all__ = [
    "MODEL_CALLS",
    "MODEL_LATENCY",
    "MODEL_TOKENS",
    "TOOL_CALLS",
    "UNKNOWNS_OPENED",
    "UNKNOWNS_SETTLED",
    "Outcome",
    "configure_tracing",
]

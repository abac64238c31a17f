"""Metrics of model and tool calls, recorded where they run (the `scope.model` and
`scope.tool` activities) through Temporal's runtime.

`ScopeWorker(metrics=True)` installs `MetricsInterceptor`; the numbers go wherever the
client's `temporalio.runtime.Runtime` sends its own metrics (Prometheus with
`PrometheusConfig`, OTLP with `OpenTelemetryConfig`, or a `MetricBuffer`); a runtime
without metrics makes them no-ops. The unknowns a workflow opens and a host settles are
counted on the workflow side (`workflow_counters`). Names: `conventions`.
"""

from __future__ import annotations

import time  # activity side: wall time of a model call, never in a workflow
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import timedelta

from temporalio.common import MetricMeter
from temporalio.worker import ActivityInboundInterceptor, Interceptor

from scope_temporal.models.protocol import Model
from scope_temporal.telemetry import conventions as c
from scope_temporal.telemetry import facts
from scope_temporal.telemetry.activity_hook import CallHook, ModelSettled, ToolSettled
from scope_temporal.telemetry.instruments import Bound


class _Instruments:
    def __init__(self, meter: MetricMeter) -> None:
        self.model_calls = Bound(meter.create_counter(c.MODEL_CALLS, "Model calls by outcome."))
        self.model_tokens = Bound(
            meter.create_counter(
                c.MODEL_TOKENS, "Tokens the provider reported, by token_type (input, output)."
            )
        )
        self.model_latency = Bound(
            meter.create_histogram_timedelta(
                c.MODEL_LATENCY, "Time of the scope.model activity.", unit="duration"
            )
        )
        self.tool_calls = Bound(
            meter.create_counter(c.TOOL_CALLS, "Entries into a tool body, by outcome.")
        )


_INSTRUMENTS: dict[MetricMeter, _Instruments] = {}
"""One set per runtime meter, kept for the process's life: workers come and go (tests,
restarts in one process), and a metric the runtime's buffer reported must stay one object
(see `instruments`)."""


class MetricsInterceptor(Interceptor):
    """Counts model calls, tokens and tool outcomes, and times model calls.

    Args:
        meter: the client runtime's meter (`Runtime.metric_meter`).
        models: the worker's models by registered name.
    """

    def __init__(self, meter: MetricMeter, models: Mapping[str, Model]) -> None:
        instruments = _INSTRUMENTS.get(meter)
        if instruments is None:
            instruments = _INSTRUMENTS[meter] = _Instruments(meter)
        self._instruments = instruments
        self._models = dict(models)

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Counting(next, self._models, self._instruments)


class _Counting(CallHook):
    def __init__(
        self,
        next: ActivityInboundInterceptor,
        models: Mapping[str, Model],
        instruments: _Instruments,
    ) -> None:
        super().__init__(next, models)
        self._instruments = instruments

    @contextmanager
    def model(self, call: facts.ModelCallFacts) -> Iterator[ModelSettled]:
        started = time.perf_counter()
        instruments = self._instruments
        labels = {"definition": call.definition, "model": call.model}

        def settled(result: facts.ModelResult) -> None:
            elapsed = timedelta(seconds=time.perf_counter() - started)
            instruments.model_calls.at(**labels, outcome=result.outcome).add(1)
            instruments.model_latency.at(**labels, outcome=result.outcome).record(elapsed)
            if result.usage is not None:
                tokens = instruments.model_tokens
                tokens.at(**labels, token_type="input").add(result.usage.input_tokens)
                tokens.at(**labels, token_type="output").add(result.usage.output_tokens)

        yield settled

    @contextmanager
    def tool(self, call: facts.ToolCallFacts) -> Iterator[ToolSettled]:
        def settled(result: facts.ToolResult) -> None:
            self._instruments.tool_calls.at(
                definition=call.definition, tool=call.tool, outcome=result.outcome
            ).add(1)

        yield settled

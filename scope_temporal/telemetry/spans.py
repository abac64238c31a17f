"""Spans for model and tool calls, with OpenTelemetry GenAI attributes.

`ScopeWorker(tracing=True)` installs `SpansInterceptor` after Temporal's own
`OpenTelemetryPlugin`, which carries the trace context across workflows, children and
activities, so every span of an Interaction's tree shares one trace (and, when the client
has Temporal's spans on, hangs under `RunActivity:scope.model` ...):

- `chat <model>` (kind CLIENT) around each `scope.model` activity: `gen_ai.operation.name`
  `chat`, `gen_ai.request.model`, `gen_ai.response.model`, `gen_ai.usage.input_tokens` /
  `output_tokens`, `gen_ai.response.finish_reasons`, and `scope.outcome`.
- `execute_tool <tool>` (kind INTERNAL) around each entry into a tool body (`scope.tool`):
  `gen_ai.operation.name` `execute_tool`, `gen_ai.tool.name`, `gen_ai.tool.call.id`, and
  `scope.outcome`.
- `invoke_agent <definition>` around each run of a `scope.Interaction` workflow and
  `background_task <tool>` around each `scope.BackgroundTask` (see `workflow_spans`).

An outcome other than `succeeded` (or `input_required` / `backgrounded`, which are not
failures) sets the span's status to ERROR with `error.type`. Prompts, arguments and
results are never recorded on spans (they may be secret; the history holds them).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from temporalio.worker import (
    ActivityInboundInterceptor,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

from scope_temporal.models.protocol import Model
from scope_temporal.telemetry import conventions as c
from scope_temporal.telemetry import facts
from scope_temporal.telemetry.activity_hook import CallHook, ModelSettled, ToolSettled
from scope_temporal.telemetry.workflow_spans import ProcessSpans, tracer

_NOT_FAILURES = frozenset({"succeeded", "input_required", "backgrounded"})


class SpansInterceptor(Interceptor):
    """Adds scope-temporal's spans to a worker (see the module docstring).

    Args:
        models: the worker's models by registered name (for `gen_ai.request.model`).
    """

    def __init__(self, models: Mapping[str, Model]) -> None:
        self._models = dict(models)

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Tracing(next, self._models)

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        return ProcessSpans


class _Tracing(CallHook):
    @contextmanager
    def model(self, call: facts.ModelCallFacts) -> Iterator[ModelSettled]:
        attributes: dict[str, str | int | float] = {
            c.OPERATION: "chat",
            c.REQUEST_MODEL: call.request_model,
            c.MODEL_NAME: call.model,
            c.DEFINITION: call.definition,
            c.PROCESS_ID: call.process_id,
            c.EFFECT_ID: call.effect_id,
            c.MODEL_CALL_SEQ: call.seq,
        }
        if call.temperature is not None:
            attributes[c.REQUEST_TEMPERATURE] = call.temperature
        if call.max_tokens is not None:
            attributes[c.REQUEST_MAX_TOKENS] = call.max_tokens
        with _span(f"chat {call.request_model}", SpanKind.CLIENT, attributes) as span:

            def settled(result: facts.ModelResult) -> None:
                if result.usage is not None:
                    span.set_attribute(c.INPUT_TOKENS, result.usage.input_tokens)
                    span.set_attribute(c.OUTPUT_TOKENS, result.usage.output_tokens)
                if result.response_model is not None:
                    span.set_attribute(c.RESPONSE_MODEL, result.response_model)
                if result.finish_reason is not None:
                    span.set_attribute(c.RESPONSE_FINISH_REASONS, [result.finish_reason])
                _outcome(span, result.outcome, result.error_type)

            yield settled

    @contextmanager
    def tool(self, call: facts.ToolCallFacts) -> Iterator[ToolSettled]:
        attributes: dict[str, str | int | float] = {
            c.OPERATION: "execute_tool",
            c.TOOL_NAME: call.tool,
            c.TOOL_CALL_ID: call.call_id,
            c.TOOL_TYPE: "function",
            c.DEFINITION: call.definition,
            c.PROCESS_ID: call.process_id,
            c.EFFECT_ID: call.effect_id,
            c.TOOL_REF: call.ref,
            c.TOOL_ENTRY: call.entry,
        }
        with _span(f"execute_tool {call.tool}", SpanKind.INTERNAL, attributes) as span:
            yield lambda result: _outcome(span, result.outcome, result.error_type)


def _span(name: str, kind: SpanKind, attributes: dict[str, str | int | float]) -> Any:
    # our own outcome decides the status; an exception (cancellation) is `unknown` already
    return tracer().start_as_current_span(
        name,
        kind=kind,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    )


def _outcome(span: Span, outcome: str, error_type: str | None) -> None:
    span.set_attribute(c.OUTCOME, outcome)
    if outcome not in _NOT_FAILURES:
        span.set_attribute(c.ERROR_TYPE, error_type or outcome)
        span.set_status(Status(StatusCode.ERROR, f"{outcome}: {error_type or outcome}"))

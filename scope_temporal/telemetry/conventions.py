"""The names scope-temporal's telemetry uses: metrics, span names and attributes.

Stable: dashboards and alerts rely on them. Metric names use underscores (not dots) and
their attributes plain words, so they read the same in Prometheus (`--metrics`) and in any
OpenTelemetry backend. Span attributes follow the OpenTelemetry GenAI semantic conventions
(`gen_ai.*`) where one fits, and `scope.*` for ours.
"""

from __future__ import annotations

from typing import Literal

# --- metrics (recorded through Temporal's runtime: its Prometheus or OTel exporter) -------

MODEL_CALLS = "scope_model_calls"
"""Counter: `scope.model` activities, by `definition`, `model` (registered name), `outcome`."""
MODEL_TOKENS = "scope_model_tokens"
"""Counter: tokens the provider reported, by `definition`, `model`, `token_type`
(`input` | `output`)."""
MODEL_LATENCY = "scope_model_latency"
"""Histogram (a duration: milliseconds, or seconds with `durations_as_seconds`): the
`scope.model` activity's run, by `definition`, `model`, `outcome`."""
TOOL_CALLS = "scope_tool_calls"
"""Counter: entries into a tool body (`scope.tool` activities), by `definition`, `tool`,
`outcome`."""
UNKNOWNS_OPENED = "scope_unknowns_opened"
"""Counter: unknown Effects a workflow started holding, by `definition`, `kind`
(`model` | `tool`). Counted by the workflow: it alone sees a timeout or a lost worker."""
UNKNOWNS_SETTLED = "scope_unknowns_settled"
"""Counter: unknown Effects a host settled, by `definition`, `kind`, `disposition`."""

Outcome = Literal["succeeded", "failed", "rejected", "unknown", "input_required", "backgrounded"]
"""The `outcome` of a model call (`succeeded` | `failed` (a definite host failure) |
`rejected` (the provider refused before running it) | `unknown`) or of one entry into a
tool body (any of these)."""

# --- spans ----------------------------------------------------------------------------

TRACER = "scope_temporal"
"""The instrumentation scope of scope-temporal's spans."""

OPERATION = "gen_ai.operation.name"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION_ID = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_TEMPERATURE = "gen_ai.request.temperature"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
ERROR_TYPE = "error.type"

OUTCOME = "scope.outcome"
"""On every span of ours: the model call's or tool entry's `Outcome`; on `invoke_agent`:
`completed` | `failed` | `canceled` | `continued_as_new`; on `background_task`: the task's
final status (`completed` | `failed` | `canceled`)."""
DEFINITION = "scope.definition"
PROCESS_ID = "scope.process_id"
EFFECT_ID = "scope.effect_id"
MODEL_NAME = "scope.model"
"""The model's name as registered on the worker (`Definition(model=...)`)."""
MODEL_CALL_SEQ = "scope.model_call_seq"
TOOL_REF = "scope.tool.ref"
TOOL_ENTRY = "scope.tool.entry"
"""Which entry into the body this is (1, then one more per answered input wait)."""
TASK_ID = "scope.task.id"

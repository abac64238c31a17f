"""Telemetry without a server: how activity results map to outcomes, the CLI flags, and
the tracer provider a traced worker insists on."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from scope_temporal import Message, Response, ToolCall, ToolResult, Usage
from scope_temporal.cli import main
from scope_temporal.interaction.effects import (
    ModelHostFailed,
    ModelResponded,
    ModelUnknown,
    ToolEffectRequest,
)
from scope_temporal.interaction.tool_call import ToolCallMachine
from scope_temporal.payloads import ToolActivityInput
from scope_temporal.telemetry import facts
from scope_temporal.tools.outcome import Failed, InputRequired, Rejected, Succeeded, Unknown

RESULT = ToolResult(call_id="c1", name="t", content="x")


def test_model_outcomes_are_succeeded_failed_or_unknown() -> None:
    response = Response(
        message=Message.assistant("hi"),
        finish_reason="stop",
        usage=Usage(input_tokens=5, output_tokens=2),
        model="gpt-x",
    )
    settled = facts.model_result(ModelResponded(effect_id="e", response=response))
    assert (settled.outcome, settled.usage, settled.response_model) == (
        "succeeded",
        Usage(input_tokens=5, output_tokens=2),
        "gpt-x",
    )
    assert settled.finish_reason == "stop"
    assert facts.model_result(ModelHostFailed(effect_id="e", message="m")).outcome == "failed"
    assert facts.model_result(ModelUnknown(effect_id="e", diagnostic="d")).outcome == "unknown"
    raised = facts.model_result(None)  # the activity raised (e.g. it was cancelled)
    assert (raised.outcome, raised.error_type) == ("unknown", "activity_error")


def test_tool_outcomes_keep_their_kind_and_code() -> None:
    assert facts.tool_result(Succeeded(result=RESULT)).outcome == "succeeded"
    assert facts.tool_result(Failed(result=RESULT)) == facts.ToolResult(
        "failed", "tool.execution_failed"
    )
    assert facts.tool_result(Rejected(result=RESULT, code="tool.not_found")) == (
        facts.ToolResult("rejected", "tool.not_found")
    )
    assert facts.tool_result(Unknown(code="tool.timeout", diagnostic="d")).error_type == (
        "tool.timeout"
    )
    waiting = InputRequired(prompt="ok?", response_schema={"type": "boolean"})
    assert facts.tool_result(waiting).outcome == "input_required"
    assert facts.tool_result(None).outcome == "unknown"


def test_the_worker_help_shows_otel_and_metrics(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["worker", "--help"]) == 0
    shown = capsys.readouterr().out
    assert "--otel" in shown and "--metrics HOST:PORT" in shown and "0.0.0.0:9464" in shown


@pytest.mark.parametrize("address", ["9464", "localhost", "host:port"])
def test_a_metrics_address_that_is_not_host_port_is_a_usage_error(
    address: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["worker", "--metrics", address]) == 2
    assert "is not HOST:PORT (e.g. 0.0.0.0:9464)" in capsys.readouterr().err


def test_a_traced_worker_refuses_a_tracer_provider_that_is_not_replay_safe() -> None:
    # in a process of its own: OpenTelemetry takes a global provider once per process
    program = textwrap.dedent(
        """
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )
        from scope_temporal import ConfigurationError, configure_tracing
        from scope_temporal.telemetry.tracing import require_replay_safe

        trace.set_tracer_provider(TracerProvider())
        for attempt in (require_replay_safe, lambda: configure_tracing(InMemorySpanExporter())):
            try:
                attempt()
            except ConfigurationError as error:
                print(error.code, error.message)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=False
    )
    lines = done.stdout.splitlines()
    assert done.returncode == 0 and len(lines) == 2, done.stdout + done.stderr
    for line in lines:
        assert line.startswith("interaction.configuration.invalid Tracing a worker needs a")
        assert "not TracerProvider: call scope_temporal.configure_tracing(exporter)" in line


def test_tool_call_facts_name_the_call() -> None:
    request = ToolEffectRequest(
        definition="d",
        digest="x",
        process_id="p/tool/1/0",
        parent_id="p",
        effect_id="p/1/0",
        ref="p/1/0",
        model_call_seq=1,
        call_index=0,
        call=ToolCall(id="call-7", name="search", arguments="{}"),
        granted=("read",),
    )
    attempt = ToolCallMachine.start(request).next_attempt()
    assert attempt is not None
    call = facts.tool_call(ToolActivityInput(attempt=attempt))
    assert (call.tool, call.call_id, call.definition, call.entry) == ("search", "call-7", "d", 1)

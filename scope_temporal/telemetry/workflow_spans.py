"""The spans of whole processes: `invoke_agent <definition>` around each run of a
`scope.Interaction` workflow, `background_task <tool>` around each `scope.BackgroundTask`.
Everything here runs inside the workflow.

The spans are made by the global tracer provider, which `ScopeWorker(tracing=True)`
requires to be Temporal's replay-safe one (`create_tracer_provider`): span ids come from
the workflow's deterministic random, a span is stamped with workflow time while replaying
and never ended then. So a run replayed on another worker (or after the cache dropped it)
recreates the same span and ends it once, when the run really ends. A workflow-task
failure (a bug; the task is retried) or an eviction leaves it open for the execution that
goes on to end.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue
from temporalio import workflow
from temporalio.worker import ExecuteWorkflowInput, WorkflowInboundInterceptor

from scope_temporal import names
from scope_temporal.payloads import InteractionInput, TaskInput
from scope_temporal.telemetry import conventions as c
from scope_temporal.workflows.eviction import evicted


@functools.cache
def tracer() -> trace.Tracer:
    """scope-temporal's tracer from the global provider (set once per process), made once:
    making one costs about as much as a span. A replay-safe provider's tracer checks for
    replay when it is used, in the workflow that uses it."""
    return trace.get_tracer(c.TRACER)


class ProcessSpans(WorkflowInboundInterceptor):
    """Wraps Interaction and background-task runs in a span; other workflows pass."""

    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        described = _describe(workflow.info(), input.args[0] if input.args else None)
        if described is None:
            return await self.next.execute_workflow(input)
        name, attributes = described
        span = tracer().start_span(name, kind=SpanKind.INTERNAL, attributes=attributes)
        outcome: str | None = None
        try:
            with trace.use_span(
                span, end_on_exit=False, record_exception=False, set_status_on_exception=False
            ):
                result = await self.next.execute_workflow(input)
            # a task's result is its final TaskSnapshot: completed, failed or canceled
            outcome = str(getattr(result, "status", "completed"))
            return result
        except workflow.ContinueAsNewError:
            outcome = "continued_as_new"
            raise
        except asyncio.CancelledError as error:
            if not evicted(error):  # an evicted run has not ended: no span for it here
                outcome = "canceled"
            raise
        except Exception as error:
            if workflow.is_failure_exception(error):
                outcome = "failed"
                span.set_status(Status(StatusCode.ERROR, str(error)))
                span.set_attribute(c.ERROR_TYPE, type(error).__name__)
            raise
        finally:
            if outcome is not None:
                span.set_attribute(c.OUTCOME, outcome)
                span.end()


def _describe(
    info: workflow.Info, argument: object
) -> tuple[str, dict[str, AttributeValue]] | None:
    if info.workflow_type == names.INTERACTION_WORKFLOW and isinstance(argument, InteractionInput):
        definition = argument.definition
        return f"invoke_agent {definition}", {
            c.OPERATION: "invoke_agent",
            c.AGENT_NAME: definition,
            c.CONVERSATION_ID: info.workflow_id,
            c.DEFINITION: definition,
            c.PROCESS_ID: info.workflow_id,
        }
    if info.workflow_type == names.TASK_WORKFLOW and isinstance(argument, TaskInput):
        tool = argument.launch.tool
        return f"background_task {tool}", {
            c.OPERATION: "execute_tool",
            c.TOOL_NAME: tool,
            c.DEFINITION: argument.definition,
            c.PROCESS_ID: info.workflow_id,
            c.TASK_ID: argument.launch.task_id,
            c.TOOL_REF: argument.ref,
        }
    return None

"""The `invoke_agent <definition>` span of each `scope.Interaction` run. Everything here
runs inside the workflow.

The span is made by the global tracer provider, which `ScopeWorker(tracing=True)` requires
to be Temporal's replay-safe one (`create_tracer_provider`): span ids come from the
workflow's deterministic random, a span is stamped with workflow time while replaying and
never ended then. So a run replayed on another worker (or after the cache dropped it)
recreates the same span and ends it once, when the run really ends. A workflow-task
failure (a bug; the task is retried) leaves it open for the retry to end.
"""

from __future__ import annotations

import asyncio
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from temporalio import workflow
from temporalio.worker import ExecuteWorkflowInput, WorkflowInboundInterceptor

from scope_temporal import names
from scope_temporal.telemetry import conventions as c


class AgentSpan(WorkflowInboundInterceptor):
    """Wraps a `scope.Interaction` run in an `invoke_agent` span; other workflows pass."""

    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        info = workflow.info()
        if info.workflow_type != names.INTERACTION_WORKFLOW:
            return await self.next.execute_workflow(input)
        definition = str(getattr(input.args[0], "definition", "")) if input.args else ""
        span = trace.get_tracer(c.TRACER).start_span(
            f"invoke_agent {definition}",
            kind=SpanKind.INTERNAL,
            attributes={
                c.OPERATION: "invoke_agent",
                c.AGENT_NAME: definition,
                c.CONVERSATION_ID: info.workflow_id,
                c.DEFINITION: definition,
                c.PROCESS_ID: info.workflow_id,
            },
        )
        outcome: str | None = None
        try:
            with trace.use_span(
                span, end_on_exit=False, record_exception=False, set_status_on_exception=False
            ):
                result = await self.next.execute_workflow(input)
            outcome = "completed"
            return result
        except workflow.ContinueAsNewError:
            outcome = "continued_as_new"
            raise
        except asyncio.CancelledError:
            outcome = "canceled"
            raise
        except Exception as error:  # not an eviction (a BaseException): nothing to end then
            if workflow.is_failure_exception(error):
                outcome = "failed"
                span.set_status(Status(StatusCode.ERROR, str(error)))
                span.set_attribute(c.ERROR_TYPE, type(error).__name__)
            raise
        finally:
            if outcome is not None:
                span.set_attribute(c.OUTCOME, outcome)
                span.end()

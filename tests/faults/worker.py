"""A scenario worker process for the fault-injection tests.

    python -m tests.faults.worker ADDRESS TASK_QUEUE LEDGER MODE [KILL_POINT]

It connects, builds its ScopeWorker, prints "ready" and waits for a line "go" on stdin
before polling: the tests start a replacement early (imports take a second) and let it
poll only once the worker it replaces is dead. With KILL_POINT it SIGKILLs itself the
first time that point is reached (see `tests.faults.scenario`); the replacement runs
without one. Workflow-side kill points (`wf.*`) fire from a worker interceptor during a
workflow task that is not a replay, so the task is lost with the process.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import (
    ContinueAsNewInput,
    ExecuteWorkflowInput,
    HandleUpdateInput,
    Interceptor,
    StartActivityInput,
    StartChildWorkflowInput,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

from scope_temporal import ScopeWorker
from scope_temporal.definition import ToolCallWorkflows
from scope_temporal.names import MODEL_ACTIVITY, TASK_WORKFLOW, TOOL_ACTIVITY, TOOL_CALL_WORKFLOW
from tests.faults import scenario
from tests.live.harness import in_mode


def _wf_kill(site: str, tag: str) -> None:
    if not workflow.unsafe.is_replaying():
        scenario.maybe_kill(site, tag)


class _Outbound(WorkflowOutboundInterceptor):
    def start_activity(self, input: StartActivityInput) -> Any:
        if input.activity == MODEL_ACTIVITY:
            payload = input.args[0]
            _wf_kill(
                "wf.schedule_model", scenario.model_tag(payload.process_id, payload.model_call_seq)
            )
        elif input.activity == TOOL_ACTIVITY:
            attempt = input.args[0].attempt
            call = attempt.request.call
            _wf_kill(
                "wf.schedule_tool", scenario.call_tag(call.name, call.arguments, attempt.entry)
            )
        return super().start_activity(input)

    async def start_child_workflow(self, input: StartChildWorkflowInput) -> Any:
        if input.workflow == TOOL_CALL_WORKFLOW:
            call = input.args[0].request.call
            _wf_kill("wf.start_child", scenario.call_tag(call.name, call.arguments, 1))
        elif input.workflow == TASK_WORKFLOW:  # the handoff: the call's task starts
            launch = input.args[0].launch
            _wf_kill("wf.start_task", scenario.call_tag(launch.tool, launch.arguments, 1))
        else:
            _wf_kill("wf.start_delegate", input.id.rsplit("/delegate/", 1)[-1])
        return await super().start_child_workflow(input)

    def continue_as_new(self, input: ContinueAsNewInput) -> NoReturn:
        _wf_kill("wf.continue_as_new", "root")
        super().continue_as_new(input)


class _Inbound(WorkflowInboundInterceptor):
    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        super().init(_Outbound(outbound))

    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        if workflow.info().workflow_type == TOOL_CALL_WORKFLOW:
            call = input.args[0].request.call
            _wf_kill("wf.child_first_task", scenario.call_tag(call.name, call.arguments, 1))
        return await super().execute_workflow(input)

    async def handle_update_handler(self, input: HandleUpdateInput) -> Any:
        result = await super().handle_update_handler(input)
        # applied to the workflow's state, not yet reported: the task dies with the worker
        _wf_kill("wf.update", input.update.removeprefix("scope."))
        return result


class KillPoints(Interceptor):
    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        return _Inbound


async def main(address: str, task_queue: str, mode: ToolCallWorkflows) -> None:
    client = await Client.connect(address)
    worker = ScopeWorker(
        client,
        task_queue=task_queue,
        definitions=[in_mode(d, mode) for d in scenario.definitions_for(task_queue)],
        tools=scenario.TOOLS,
        models={"default": scenario.LedgerModel()},
        observers=[scenario.KillingObserver()],
        middleware=[scenario.killing_middleware],
        interceptors=[KillPoints()],
    )
    print("ready", flush=True)
    line = await asyncio.to_thread(sys.stdin.readline)
    if line.strip() != "go":
        return
    await worker.run()


if __name__ == "__main__":
    scenario.LEDGER[0] = Path(sys.argv[3])
    scenario.KILL_AT[0] = sys.argv[5] if len(sys.argv) > 5 else ""
    os.environ["OPENAI_API_KEY"] = scenario.SECRET  # a secret on the worker, as in production
    asyncio.run(
        main(sys.argv[1], sys.argv[2], "on_demand" if sys.argv[4] == "on_demand" else "always")
    )

"""Workflow `scope.Interaction`. Everything here runs inside the workflow: deterministic.

A thin shell around `InteractionDriver` (the same driver `LocalRunner` runs): it finds
the Definition, records the run's settings in history, and hands everything else to the
driver with `TemporalTransport`; it takes the host's inputs as every process does
(`process`), and steers, task submissions and its children's reports besides.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta  # deterministic: a value type, no clock
from typing import Any

from temporalio import workflow
from temporalio.common import RawValue

from scope_temporal import errors, names
from scope_temporal.driver.interaction import InteractionDriver
from scope_temporal.driver.start import open_machine, settings_of
from scope_temporal.errors import ScopeError
from scope_temporal.interaction.attention import AttentionReport
from scope_temporal.interaction.events import FailedEvent
from scope_temporal.mcp.values import McpListRefused
from scope_temporal.outputs import Failure, Output
from scope_temporal.payloads import (
    ContextPage,
    ContextPageRequest,
    InteractionInput,
    RunSettings,
    SteerInput,
    TaskSubmitInput,
    ToolInputAnswer,
)
from scope_temporal.workflows import inputs, serving
from scope_temporal.workflows.events import SentEvents, TreeStream
from scope_temporal.workflows.eviction import evicted
from scope_temporal.workflows.mcp_listing import with_mcp_tools
from scope_temporal.workflows.outcomes import (
    failure_error,
    refused_as_update,
    scope_workflow,
    update_rejection,
)
from scope_temporal.workflows.process import ProcessWorkflow
from scope_temporal.workflows.task_commands import command_issued, refuse_update_after_commands
from scope_temporal.workflows.temporal import TemporalTransport


@scope_workflow(names.INTERACTION_WORKFLOW)
class InteractionWorkflow(ProcessWorkflow):
    """One Interaction of any registered Definition (chosen by name from the input)."""

    @workflow.init
    def __init__(self, input: InteractionInput) -> None:
        # The driver exists before the first handler runs, so a steer or query that
        # arrives with the very first workflow task finds it.
        served = serving.current()
        info = workflow.info()
        opened = open_machine(input, info.workflow_id, served, f"task queue {info.task_queue!r}")
        self._startup_failure: Failure | None = None
        self._driver: InteractionDriver | None = None
        # A root hosts its tree's event stream (its handlers exist from the first task on;
        # it takes long polls once the run's settings are recorded).
        self._stream: TreeStream | None = None
        events_to, carry = input.route.events_to, input.carry
        if events_to is None:
            self._stream = TreeStream(carry.stream, open=carry.settings is not None)
        self._transport = TemporalTransport(self._stream or SentEvents(events_to or ""))
        if isinstance(opened, Failure):
            self._startup_failure = opened
        else:
            self._driver = InteractionDriver(
                opened, self._transport, input, limit=served.payload_limit
            )

    @workflow.run
    async def run(self, input: InteractionInput) -> Output:
        driver = self._driver
        if driver is None:
            startup = self._startup_failure or Failure.of(errors.STATE_INVALID, "did not start")
            raise await self._failed(startup)
        settings = input.carry.settings or await self._record(driver)
        listed = await with_mcp_tools(driver.machine.definition, settings)
        if isinstance(listed, McpListRefused):
            raise await self._failed(Failure.of(listed.code, listed.message))
        changed = driver.begin(listed)
        if self._stream is not None:
            self._stream.open()
        if changed is not None:
            raise await self._failed(changed)
        try:
            result = await driver.run()
        except (Exception, asyncio.CancelledError) as error:
            if not evicted(error):  # failed or cancelled: its last events go out first
                await self._transport.close_events()
            raise
        await self._transport.close_events()  # completed: likewise
        if isinstance(result, Failure):
            raise failure_error(result)
        return result

    async def _failed(self, failure: Failure) -> Exception:
        """The error to fail with before the machine ran, its event published."""
        event = FailedEvent(process_id=workflow.info().workflow_id, failure=failure)
        self._transport.publish([event])
        await self._transport.close_events()
        return failure_error(failure)

    async def _record(self, driver: InteractionDriver) -> RunSettings:
        """The run's settings, recorded in history as a local activity's result: a replay
        reads them back (a changed Definition then fails with its code instead of silently
        diverging), never the replaying worker's configuration."""
        definition = driver.machine.definition
        # The tree roll-up's upserts and reports are commands issued when an outcome is
        # recorded; an update settling that outcome may arrive in the same workflow task.
        # Updates are refused while commands may precede them (`task_commands`), so a
        # replay keeps their order.
        settings = settings_of(definition, serving.current(), attention=True)
        command_issued()
        recorded = await workflow.execute_local_activity(
            names.RECORD_DIGEST_ACTIVITY,
            settings,
            result_type=RawValue,
            start_to_close_timeout=timedelta(seconds=10),
            summary=f"definition {definition.name} {definition.digest[:12]}",
        )
        value: Any = workflow.payload_converter().from_payload(recorded.payload)
        if isinstance(value, str):  # recorded before the settings were: the digest alone
            return settings.model_copy(update={"digest": value})
        return RunSettings.model_validate(value)

    # --- signals and updates (besides those every process takes: `process`) ----------

    @workflow.signal(name=names.STEER)
    def steer_signal(self, raw: RawValue) -> None:
        input = self._signal(raw, SteerInput, "steer", "signal_id")
        if input is not None:
            self._process().steer_signal(input)

    @workflow.update(name=names.STEER)
    def steer_update(self, raw: RawValue) -> bool:
        with refused_as_update():
            return self._process().steer_update(inputs.decode(raw, SteerInput, "steer"))

    @steer_update.validator
    def _validate_steer(self, raw: RawValue) -> None:
        refuse_update_after_commands()
        with refused_as_update():
            self._process().validate_steer(inputs.decode(raw, SteerInput, "steer"))

    @workflow.update(name=names.TOOL_INPUT)
    def tool_input_update(self, raw: RawValue) -> bool:
        raise update_rejection(self._answer_elsewhere(raw))

    @tool_input_update.validator
    def _validate_tool_input(self, raw: RawValue) -> None:
        raise update_rejection(self._answer_elsewhere(raw))

    def _answer_elsewhere(self, raw: RawValue) -> ScopeError:
        try:
            input = inputs.decode(raw, ToolInputAnswer, "tool_input")
        except ScopeError as error:
            return error
        return self._process().answer_elsewhere(input)

    @workflow.update(name=names.TASK_SUBMIT)
    async def submit_task(self, raw: RawValue) -> str:
        with refused_as_update():
            input = inputs.decode(raw, TaskSubmitInput, "task_submit")
            return await self._process().submissions.submit(input)

    @submit_task.validator
    def _validate_submit_task(self, raw: RawValue) -> None:
        refuse_update_after_commands()
        with refused_as_update():
            input = inputs.decode(raw, TaskSubmitInput, "task_submit")
            self._process().submissions.check(input)

    @workflow.signal(name=names.ATTENTION)
    def attention_signal(self, report: AttentionReport) -> None:
        """A child's report of what it needs from a person (sent by the SDK only)."""
        self._process().attention_signal(report)

    @workflow.query(name=names.CONTEXT_QUERY)
    def context_page(self, input: ContextPageRequest) -> ContextPage:
        """Messages of the latest model call, for a worker whose cache missed them."""
        return self._process().context_page(input)

    def _process(self) -> InteractionDriver:
        if self._driver is None:
            raise errors.ProtocolError("The Interaction has not started yet.")
        return self._driver

"""The one place the telemetry meets the `scope.model` and `scope.tool` activities.

An activity interceptor, so nothing in `scope_temporal/activities` knows about telemetry:
it reads the call from the activity's input (the raw payload, read as the activity reads
it: `read_activity_input`) before it runs and its outcome from what it
returns (or `unknown` if it raises, e.g. when cancelled), and hands both to a hook.
Installed after Temporal's own `OpenTelemetryPlugin`, it runs inside its `RunActivity`
span. Other activities pass untouched.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any

from temporalio import activity
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput

from scope_temporal import names
from scope_temporal.activities.raw_input import read_activity_input
from scope_temporal.models.protocol import Model
from scope_temporal.payloads import ModelActivityInput, ToolActivityInput
from scope_temporal.telemetry import facts

ModelSettled = Callable[[facts.ModelResult], None]
ToolSettled = Callable[[facts.ToolResult], None]


class CallHook(ActivityInboundInterceptor, ABC):
    """Calls `model(call)` / `tool(call)` around each model / tool activity: the context
    manager they return is entered before the activity runs, and the function it yields is
    given the outcome before it is left."""

    def __init__(self, next: ActivityInboundInterceptor, models: Mapping[str, Model]) -> None:
        super().__init__(next)
        self._models = models

    @abstractmethod
    def model(self, call: facts.ModelCallFacts) -> AbstractContextManager[ModelSettled]: ...

    @abstractmethod
    def tool(self, call: facts.ToolCallFacts) -> AbstractContextManager[ToolSettled]: ...

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        kind = activity.info().activity_type
        if kind == names.MODEL_ACTIVITY:
            call = facts.model_call(
                read_activity_input(input.args[0], ModelActivityInput), self._models
            )
            with self.model(call) as settled:
                return await self._run(input, lambda result: settled(facts.model_result(result)))
        if kind == names.TOOL_ACTIVITY:
            with self.tool(
                facts.tool_call(read_activity_input(input.args[0], ToolActivityInput))
            ) as done:
                return await self._run(input, lambda result: done(facts.tool_result(result)))
        return await self.next.execute_activity(input)

    async def _run(self, input: ExecuteActivityInput, settle: Callable[[object], None]) -> Any:
        result: object = None
        try:
            result = await self.next.execute_activity(input)
            return result
        finally:
            settle(result)

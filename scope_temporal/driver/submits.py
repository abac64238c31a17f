"""Host-submitted background tasks, on the driver's side (`InteractionHandle.submit_task`).

`interaction.submits.decide` says what a submission does; this carries it out. A new task
goes through the tool's own activity exactly as a model's call with
`run_in_background=true` would (the same schema check, permission check, `prepare_input`
and `validate_arguments`; no run begins there), then its `scope.BackgroundTask` starts and
the machine records it. A refusal at any step raises a typed error and records nothing.
The launch runs as driver work (the Interaction does not continue-as-new or end its run
while one is in flight); a key being submitted is refused until that submission returned.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from scope_temporal import errors
from scope_temporal.driver.calls import attempt_tool, tool_call_input
from scope_temporal.driver.transport import InteractionTransport
from scope_temporal.errors import InvalidTaskSubmission, ScopeError
from scope_temporal.interaction import submits
from scope_temporal.interaction.effects import StartToolCall
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.interaction.tool_call import ToolAttempt
from scope_temporal.payloads import Route, TaskSubmitInput
from scope_temporal.tools.outcome import Failed, Rejected, Succeeded, Unknown

Spawn = Callable[[Coroutine[Any, Any, None]], None]


class Submissions:
    """The host's task submissions to one Interaction run."""

    def __init__(
        self,
        machine: InteractionMachine,
        transport: InteractionTransport,
        spawn: Spawn,
        route: Route,
    ) -> None:
        self._machine = machine
        self._route = route  # the tree's event stream; a session's turn: its session
        self._transport = transport
        self._spawn = spawn
        self._in_flight: set[str] = set()

    def check(self, input: TaskSubmitInput) -> submits.Existing | submits.Launch:
        """What `input` would do; raises the typed refusal (see `interaction.submits`)."""
        machine = self._machine
        if input.key in self._in_flight:
            raise InvalidTaskSubmission(
                f"task key {input.key!r} is being submitted right now; send it again once "
                "that submission returned (the same arguments then give the same task)."
            )
        return submits.decide(
            machine.definition,
            machine.state,
            input.key,
            input.tool,
            input.arguments,
            ended=machine.done,
        )

    async def submit(self, input: TaskSubmitInput) -> str:
        """Start the submitted task (or find it); returns its task id.

        Raises:
            InvalidTaskSubmission: refused (nothing started, nothing recorded).
            ScopeError: the validation attempt was lost or the task could not start
                (`interaction.protocol.invalid`): nothing recorded; send it again.
        """
        decision = self.check(input)
        if isinstance(decision, submits.Existing):
            return decision.task_id
        self._in_flight.add(input.key)
        done: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._spawn(self._launch(decision, input.key, done))
        return await done

    async def _launch(
        self,
        launch: submits.Launch,
        key: str,
        done: asyncio.Future[str],
    ) -> None:
        try:
            done.set_result(await self._start(launch))
        except ScopeError as error:
            done.set_exception(error)
        except asyncio.CancelledError:
            done.set_exception(
                InvalidTaskSubmission("the Interaction ended before the task started.")
            )
            raise
        finally:
            self._in_flight.discard(key)

    async def _start(self, launch: submits.Launch) -> str:
        machine = self._machine
        payload = tool_call_input(machine, StartToolCall(request=launch.request), 0, self._route)
        outcome = await attempt_tool(
            self._transport,
            ToolAttempt(request=launch.request, entry=1),
            start_to_close=payload.start_to_close,
            heartbeat=payload.heartbeat,
            route=self._route,
        )
        if isinstance(outcome, Succeeded) and outcome.task_id == launch.task.task_id:
            machine.record_submitted(launch.task)
            return launch.task.task_id
        if isinstance(outcome, Unknown):
            raise ScopeError(
                f"task {launch.task.task_id!r} did not start ({outcome.diagnostic}); nothing "
                "was recorded: submit it again with the same key.",
                code=errors.PROTOCOL_INVALID,
            )
        if isinstance(outcome, Failed | Rejected):
            raise InvalidTaskSubmission(
                f"{launch.task.tool} refused the arguments: {outcome.result.content}"
            )
        raise InvalidTaskSubmission(
            f"{launch.task.tool} did not move to the background ({outcome.kind}); only a "
            "background tool's call can be submitted."
        )


__all__ = ["Submissions"]

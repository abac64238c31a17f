"""The session driver's transport on Temporal. Everything here runs inside the workflow:
deterministic. `TemporalTransport` (the Interaction's), plus a session's turns and its
continue-as-new."""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn

from temporalio import workflow

from scope_temporal import names
from scope_temporal.driver.transport import ChildEnd
from scope_temporal.outputs import Output
from scope_temporal.payloads import InteractionInput, SessionInput
from scope_temporal.workflows.task_commands import command_issued
from scope_temporal.workflows.temporal import TemporalTransport, run_child

STEER_ANSWERS_PATCH = "scope.session.steer_answers"
"""Sessions pass steers asking their turn for its answer (`SessionDriver` rule 1a); a
session recorded before replays without asking, as it ran."""


class SessionTemporalTransport(TemporalTransport):
    """`SessionTransport` on Temporal: each turn is a child `scope.Interaction`."""

    async def run_turn(
        self,
        input: InteractionInput,
        *,
        process_id: str,
        summary: str,
        started: Callable[[], None],
    ) -> Output | ChildEnd:
        return await run_child(
            names.INTERACTION_WORKFLOW,
            input,
            Output,
            id=process_id,
            summary=summary,
            started=started,
        )

    def asks_steer_answers(self) -> bool:
        command_issued()  # the patch marker
        return workflow.patched(STEER_ANSWERS_PATCH)

    def handlers_finished(self) -> bool:
        return workflow.all_handlers_finished()

    async def continue_session_as_new(self, input: SessionInput) -> NoReturn:
        command_issued()
        workflow.continue_as_new(input)


__all__ = ["SessionTemporalTransport"]

"""The session driver's transport on Temporal. Everything here runs inside the workflow:
deterministic. `TemporalTransport` (the Interaction's), plus a session's turns and its
continue-as-new."""

from __future__ import annotations

from typing import NoReturn

from temporalio import workflow

from scope_temporal.payloads import SessionInput
from scope_temporal.workflows.task_commands import command_issued
from scope_temporal.workflows.temporal import TemporalTransport

STEER_ANSWERS_PATCH = "scope.session.steer_answers"
"""Sessions pass steers asking their turn for its answer (`SessionDriver` rule 1a); a
session recorded before replays without asking, as it ran."""


class SessionTemporalTransport(TemporalTransport):
    """`SessionTransport` on Temporal: each turn is a child `scope.Interaction`."""

    run_turn = TemporalTransport.run_delegate  # a turn is a child Interaction

    def asks_steer_answers(self) -> bool:
        command_issued()  # the patch marker
        return workflow.patched(STEER_ANSWERS_PATCH)

    async def continue_session_as_new(self, input: SessionInput) -> NoReturn:
        command_issued()
        workflow.continue_as_new(input)


__all__ = ["SessionTemporalTransport"]

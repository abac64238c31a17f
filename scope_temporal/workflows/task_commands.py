"""An update is refused when it might be recorded after commands the workflow issued
before it in an unfinished workflow task.

Why (measured in the fault-injection suite: about one kill run in five once ToolCall and
delegate children signal their events to the root). A workflow task that times out or
fails (its worker died or stalled) leaves no trace of the commands the workflow issued in
it; a cached workflow does not issue them again, so SDK core sends them with the next
task's completion, ahead of an update accepted in that task. History then reads
"command, update accepted", while a replay (which handles the earlier events and the
update in one activation, updates first) issues "update accepted, command": a
nondeterminism error, and a workflow that cannot move until a person resets it (the
same family as sdk-core's ordering bugs after a workflow-task timeout with an update).
The same holds for commands issued earlier in the very task the update arrives in.

The rule avoids the situation instead of racing it: a validator refuses an update
(`names.UPDATE_AFTER_COMMANDS`, nothing applied, nothing in history) when the workflow
issued a command in this workflow task or in one that did not complete. The history
length tells: it is the same for every activation of one task; the next task after a
timed-out or failed one starts three events later (timed out or failed, scheduled,
started), while a completed task that issued a command adds at least four (completed,
the command's event, scheduled, started). The client sends a refused update again
(`update_retry`); it lands in a later task. Everything here runs inside the workflow.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from scope_temporal.names import UPDATE_AFTER_COMMANDS

_UNFINISHED_TASK_EVENTS = 3
"""Events from one task's start to the next's when the first did not complete."""


class CommandsInTask:
    """Mixed into each of our workflow classes: the workflow task of its last command."""

    _commands_in_task: int = -(_UNFINISHED_TASK_EVENTS + 1)


def command_issued() -> None:
    """Note that the running workflow issues a command (activity, child, timer, signal,
    cancel, search-attribute upsert, local activity, continue-as-new) in this task."""
    instance = workflow.instance()
    if isinstance(instance, CommandsInTask):
        instance._commands_in_task = workflow.info().get_current_history_length()


def commands_may_precede_an_update() -> bool:
    """Whether commands issued in this workflow task, or in an earlier one that did not
    complete, could be recorded ahead of an update accepted now."""
    instance = workflow.instance()
    if not isinstance(instance, CommandsInTask):
        return False
    since = workflow.info().get_current_history_length() - instance._commands_in_task
    return 0 <= since <= _UNFINISHED_TASK_EVENTS


def refuse_update_after_commands(*, closing: bool = False) -> None:
    """Raise (in an update validator) when `commands_may_precede_an_update()`, or when the
    run is `closing` (it continues as new: the sender's next try reaches the next run).

    Raises:
        ApplicationError: of type `UPDATE_AFTER_COMMANDS`; nothing was applied.
    """
    if closing or commands_may_precede_an_update():
        raise ApplicationError(
            "The process was busy in this workflow task; nothing was applied. Send it again "
            "(the client does so by itself).",
            type=UPDATE_AFTER_COMMANDS,
        )


__all__ = [
    "CommandsInTask",
    "command_issued",
    "commands_may_precede_an_update",
    "refuse_update_after_commands",
]

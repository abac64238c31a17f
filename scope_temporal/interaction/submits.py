"""Host-submitted background tasks (`InteractionHandle.submit_task`), decided purely.

A host may start a registered background tool directly as a task of a running
Interaction. `decide` says what a submission does, and changes nothing:

- `Existing`: the same task id was submitted before with the same tool and arguments
  (idempotency by task id): nothing new starts, the caller gets the task id again;
- `Launch`: a new task; the driver validates the arguments as a model's call would be (the
  tool's schema, `prepare_input`, `validate_arguments`, in the tool's own activity, with
  `run_in_background=true` so no run begins there), starts the task, and records it with
  `record`: from then on it is one of the Interaction's tasks (snapshot, `task_status` and
  the other task tools, lifecycle notifications, cancellation with the Interaction).

Everything else is a typed error (`InvalidTaskSubmission`; `TaskSubmissionConflict` for a
task id used with other arguments) and nothing is started or recorded: the Interaction
has ended, the key is not a short plain id, the tool is unknown to the Definition, is not
a background tool, or needs a permission the Interaction does not hold, or the arguments
are not a JSON object or set the reserved `run_in_background`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict

from scope_temporal.chat import ToolCall
from scope_temporal.definition import Definition
from scope_temporal.errors import InvalidTaskSubmission, TaskSubmissionConflict
from scope_temporal.interaction.effects import ToolEffectRequest
from scope_temporal.interaction.state import InteractionState, SubmittedTask
from scope_temporal.mcp.binding import mcp_record
from scope_temporal.tools.spec import RUN_IN_BACKGROUND

KEY = re.compile(r"[A-Za-z0-9._-]{1,128}")
"""What a submission's task key may be (it becomes part of the task's workflow id)."""


class Existing(BaseModel):
    """Submitted before with the same tool and arguments: nothing new starts."""

    model_config = ConfigDict(frozen=True)
    task_id: str


class Launch(BaseModel):
    """A new task: validate its arguments with the tool's call `request`, then start it."""

    model_config = ConfigDict(frozen=True)
    task: SubmittedTask
    request: ToolEffectRequest


def task_id_of(process_id: str, key: str) -> str:
    """The task id of the submission `key` of Interaction `process_id`."""
    return f"{process_id}/task/submit/{key}"


def canonical(arguments: dict[str, Any]) -> str:
    """The arguments as the submission records them (sorted keys): equal JSON, equal text."""
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def decide(
    definition: Definition,
    state: InteractionState,
    key: str,
    tool: str,
    arguments: Any,
    *,
    ended: bool,
) -> Existing | Launch:
    """What submitting `tool(arguments)` as task `key` does (see the module docstring).

    Raises:
        InvalidTaskSubmission: refused; nothing starts and nothing is recorded.
        TaskSubmissionConflict: `key` was submitted before with another tool or arguments.
    """
    if ended:
        raise InvalidTaskSubmission(
            f"Interaction {state.process_id!r} has ended ({state.phase}); submit the task to "
            "a running Interaction."
        )
    if not isinstance(key, str) or KEY.fullmatch(key) is None:
        raise InvalidTaskSubmission(
            f"task key {key!r}: use 1-128 letters, digits, '.', '_' or '-' (it names the task)."
        )
    if not isinstance(arguments, dict):
        raise InvalidTaskSubmission(
            f"arguments of {tool!r} must be a JSON object, not {type(arguments).__name__}."
        )
    text = canonical(arguments)
    task_id = task_id_of(state.process_id, key)
    for earlier in state.submitted:
        if earlier.task_id == task_id:
            if (earlier.tool, earlier.arguments) == (tool, text):
                return Existing(task_id=task_id)
            raise TaskSubmissionConflict(
                f"task key {key!r} was submitted with {earlier.tool}({earlier.arguments}); "
                "use a new key for other arguments."
            )
    _check_tool(definition, state, tool)
    if RUN_IN_BACKGROUND in arguments:
        raise InvalidTaskSubmission(
            f"{RUN_IN_BACKGROUND!r} is reserved: a submitted task always runs in the background."
        )
    call = ToolCall(
        id=f"submit-{key}", name=tool, arguments=canonical({**arguments, RUN_IN_BACKGROUND: True})
    )
    request = ToolEffectRequest(
        definition=state.definition,
        digest=state.digest,
        process_id=state.process_id,
        parent_id=state.process_id,
        effect_id=f"{state.process_id}/call/submit/{key}",
        ref=f"{state.process_id}#submit/{key}",
        model_call_seq=0,
        call_index=0,
        call=call,
        granted=state.granted,
    )
    return Launch(task=SubmittedTask(task_id=task_id, tool=tool, arguments=text), request=request)


def _check_tool(definition: Definition, state: InteractionState, tool: str) -> None:
    tools = definition.tools
    spec = tools.get(tool)
    background = sorted(s.name for s in tools.tools + tools.deferred if s.background is not None)
    if spec is None or spec.background is None:
        what = "is not a tool of" if spec is None else "is not a background tool of"
        raise InvalidTaskSubmission(
            f"{tool!r} {what} Definition {definition.name!r}; its background tools: "
            f"{', '.join(background) or 'none'}."
        )
    if mcp_record(definition, tool) is not None:
        raise InvalidTaskSubmission(
            f"{tool!r} is an MCP tool: its call is sent only in the call's own attempt, so "
            "only the model's call starts it (with run_in_background=true); a host cannot "
            "submit it."
        )
    if spec.permission not in state.granted:
        raise InvalidTaskSubmission(
            f"{tool!r} needs permission {spec.permission!r}, which Interaction "
            f"{state.process_id!r} does not hold (it holds {', '.join(state.granted)})."
        )


def record(s: InteractionState, task: SubmittedTask) -> None:
    """Note a submitted task that started (once)."""
    if all(t.task_id != task.task_id for t in s.submitted):
        s.submitted.append(task)


__all__ = ["KEY", "Existing", "Launch", "canonical", "decide", "record", "task_id_of"]

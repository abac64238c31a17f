"""How a background tool's calls are shown: its optional, pure `description(arguments)`
(a line for people: hosts, `inspect`, the snapshot) and `render_result(task)` (a rich
form of a completed result, for the model).

Both run in worker code (the foreground attempt and the task tools), never in a workflow.
A hook that raises, or returns what cannot be shown, changes nothing about the task: the
envelope the model reads says what went wrong instead.
"""

from __future__ import annotations

import json
from typing import Any

from scope_temporal.interaction.snapshot import TaskSnapshot
from scope_temporal.tools.output import json_form

MAX_DESCRIPTION_CHARS = 200


def described(impl: Any, arguments: Any) -> tuple[str | None, str | None]:
    """`impl.description(arguments)` (at most 200 characters), and the error if it failed."""
    method = getattr(impl, "description", None)
    if not callable(method):
        return None, None
    try:
        text = method(arguments)
    except Exception as error:
        return None, f"description(arguments) raised {type(error).__name__}: {error}"
    if not isinstance(text, str):
        return None, f"description(arguments) returned {type(text).__name__}, not a string"
    return text[:MAX_DESCRIPTION_CHARS], None


def rendered(impl: Any, task: TaskSnapshot) -> dict[str, Any]:
    """The envelope fields `impl.render_result(task)` adds to a completed task's result:
    `rendered` (a JSON value), or `render_error` (the result itself is shown as is)."""
    method = getattr(impl, "render_result", None)
    if not callable(method) or task.status != "completed":
        return {}
    try:
        value = json_form(method(task))
        json.dumps(value)
    except Exception as error:
        return {"render_error": f"render_result(task) raised {type(error).__name__}: {error}"}
    return {"rendered": value}


__all__ = ["MAX_DESCRIPTION_CHARS", "described", "rendered"]

"""Builders for scripted model responses (`from scope_temporal.models import reply`).

Every builder returns a plain `Response`, so scripts read like the conversation they
simulate::

    ScriptedModel([
        reply.tool_calls(("search_docs", {"query": "restart"})),
        reply.text("Restart it with `systemctl restart api`."),
    ])

Tool calls are written as `(name, arguments)` or `(name, arguments, id)`. A mapping
argument is JSON-encoded; a string is kept verbatim, so a test can send JSON that is
invalid or does not match the schema. Calls without an explicit id get `call_<n>`,
where n is the call's 1-based position in its response: ids are deterministic and
restart at `call_1` in every response.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from scope_temporal.chat import FinishReason, Message, Response, ToolCall, Usage

__all__ = ["CallSpec", "length", "response", "text", "tool_calls"]

CallSpec = tuple[str, Mapping[str, Any] | str] | tuple[str, Mapping[str, Any] | str, str] | ToolCall
"""One tool call: `(name, arguments)`, `(name, arguments, id)` or a ready `ToolCall`."""


def response(
    text: str | None = None,
    tool_calls: tuple[CallSpec, ...] | list[CallSpec] = (),
    finish_reason: FinishReason | str | None = None,
    *,
    usage: Usage | None = None,
    model: str | None = None,
) -> Response:
    """Build any response.

    Args:
        text: the assistant text (None or "" for none).
        tool_calls: the calls, in order (see the module docstring for their forms).
        finish_reason: the finish reason; None means `tool_calls` when there are calls
            and `stop` otherwise.
        usage: token accounting to report, if any.
        model: the model name to report, if any.

    Returns:
        The Response, with an assistant message holding the text then the calls.

    Raises:
        ValueError: a finish reason that is not a `FinishReason` value.
        TypeError: a tool call in none of the accepted forms.
    """
    calls = tuple(_tool_call(spec, position) for position, spec in enumerate(tool_calls, 1))
    if finish_reason is None:
        reason = FinishReason.tool_calls if calls else FinishReason.stop
    else:
        reason = FinishReason(finish_reason)
    return Response(
        message=Message.assistant(text, calls),
        finish_reason=reason,
        usage=usage,
        model=model,
    )


def text(content: str, *, usage: Usage | None = None, model: str | None = None) -> Response:
    """A final text reply (finish reason `stop`)."""
    return response(content, finish_reason=FinishReason.stop, usage=usage, model=model)


def tool_calls(
    *calls: CallSpec,
    text: str | None = None,
    usage: Usage | None = None,
    model: str | None = None,
) -> Response:
    """A reply asking for tool calls (finish reason `tool_calls`), optionally with text."""
    return response(text, calls, FinishReason.tool_calls, usage=usage, model=model)


def length(
    text: str | None = None,
    tool_calls: tuple[CallSpec, ...] | list[CallSpec] = (),
    *,
    usage: Usage | None = None,
    model: str | None = None,
) -> Response:
    """A reply cut off by the token limit (finish reason `length`)."""
    return response(text, tool_calls, FinishReason.length, usage=usage, model=model)


def _tool_call(spec: CallSpec, position: int) -> ToolCall:
    if isinstance(spec, ToolCall):
        return spec
    if not isinstance(spec, tuple) or len(spec) not in (2, 3):
        raise TypeError(
            f"tool call #{position}: expected (name, arguments) or (name, arguments, id) "
            f"or a ToolCall, got {spec!r}"
        )
    name, arguments = spec[0], spec[1]
    call_id = spec[2] if len(spec) == 3 else f"call_{position}"
    raw = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
    return ToolCall(id=call_id, name=name, arguments=raw)

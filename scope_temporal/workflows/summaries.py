"""One-line texts the Temporal UI shows for activities, children and the live status."""

from __future__ import annotations

import json

from scope_temporal.chat import ToolCall

_LIMIT = 80


def _shorten(text: str, limit: int = _LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def call_summary(kind: str, call: ToolCall) -> str:
    """`tool search_docs(query='disk full')`; unparseable arguments are shown raw."""
    try:
        arguments = json.loads(call.arguments or "{}")
    except ValueError:
        arguments = None
    if isinstance(arguments, dict):
        shown = ", ".join(
            f"{k}={_shorten(json.dumps(v, ensure_ascii=False), 30)}" for k, v in arguments.items()
        )
    else:
        shown = _shorten(call.arguments, 40)
    return _shorten(f"{kind} {call.name}({shown})")


def model_summary(model_call_seq: int, model: str) -> str:
    return f"model #{model_call_seq}: {model}"

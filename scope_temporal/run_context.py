"""Run context: who and what an Interaction acts for, for its tools (pure; every side).

A run context is a small JSON object given when an Interaction (or a session) starts:
identities and ids such as a tenant, a user, a session id. It is stored in the
Interaction's input and state, so it is in workflow history: put identities in it, never
secrets. Tools read it from `current_tool_call().context` (or `run_context()`, which
background task attempts may call too); background tasks and delegates inherit it; the
model never sees it (it is not a message).

A context that is not a JSON object, or whose JSON is over `MAX_RUN_CONTEXT_BYTES`, is
refused with `InvalidRunContext` (code `interaction.context.invalid`) before anything
starts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from scope_temporal.errors import InvalidRunContext

MAX_RUN_CONTEXT_BYTES = 16 * 1024
"""The largest run context, as compact JSON: ids and identities, not data."""

SESSION_KEY = "session_id"
"""The key under which a session's turns find their session id."""


def check_run_context(value: object) -> dict[str, Any]:
    """The run context as a plain JSON object, or why it cannot be one.

    Raises:
        InvalidRunContext: not a mapping with string keys, not JSON-serialisable (or holds
            NaN / infinity), or over `MAX_RUN_CONTEXT_BYTES`.
    """
    if not isinstance(value, Mapping):
        raise InvalidRunContext(
            f"A run context must be a JSON object (a dict), not {type(value).__name__}; "
            "nothing was started. Pass e.g. context={'user_id': 'u-1'}."
        )
    if not all(isinstance(key, str) for key in value):
        raise InvalidRunContext(
            "A run context is a JSON object: its keys must be strings; nothing was started."
        )
    try:
        text = json.dumps(dict(value), separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as error:
        raise InvalidRunContext(
            f"The run context is not JSON ({error}); nothing was started. Use strings, "
            "numbers, booleans, null, lists and objects with string keys."
        ) from None
    size = len(text.encode())
    if size > MAX_RUN_CONTEXT_BYTES:
        raise InvalidRunContext(
            f"The run context is {size:,} bytes of JSON, over the limit of "
            f"{MAX_RUN_CONTEXT_BYTES:,}; nothing was started. It is stored in workflow "
            "history: keep identities and ids in it, and fetch data in the tools."
        )
    decoded: dict[str, Any] = json.loads(text)
    return decoded


__all__ = ["MAX_RUN_CONTEXT_BYTES", "SESSION_KEY", "check_run_context"]

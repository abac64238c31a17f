"""`ToolOutput`: a tool result that separates what the model sees from what the host sees."""

from __future__ import annotations

import json
from dataclasses import KW_ONLY
from typing import Any

from pydantic import ConfigDict
from pydantic.dataclasses import dataclass
from pydantic_core import to_json

__all__ = ["ToolOutput", "json_form"]


def json_form(value: Any) -> Any:
    """The value as it will look after crossing a JSON boundary (ints keep precision).

    Raises:
        pydantic_core.PydanticSerializationError: the value is not JSON-serialisable.
    """
    return None if value is None else json.loads(to_json(value))


@dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class ToolOutput:
    """A tool's return value with extras that never enter the model context.

    Only `for_llm` (or, when `silent`, a short acknowledgement) reaches the model;
    `for_user`, `ref` and `metadata` travel on the settlement and appear in the snapshot.
    `for_user` and `metadata` must be JSON-serialisable; they are kept in JSON form.
    """

    for_llm: str
    """The model-visible content."""
    _: KW_ONLY
    for_user: Any = None
    """Shown to the host/user, never to the model."""
    ref: str | None = None
    """An opaque reference (e.g. an artifact id) for the host."""
    metadata: dict[str, Any] | None = None
    """Free-form host-side data (timings, sizes, ...)."""
    silent: bool = False
    """True: the model sees only an acknowledgement that the output was delivered."""

"""`OutputMask`: middleware that redacts a tool result for the model while the user
channel keeps it whole (the tools design's OutputMask).

The model sees the result with every match of `patterns` (regular expressions) and the
values of `fields` (keys of JSON objects, at any depth) replaced; the host sees the
original in the result's `for_user` (in the snapshot and the settlement, never in the
model context). A body's own `ToolOutput` keeps its `for_user`, `ref`, `metadata` and
`silent`; only its `for_llm` is redacted, and its `for_user` is set to the unredacted
text when it had none. A result with nothing to redact passes unchanged. Failures
(`ToolFailure` messages) and input-wait prompts are not results and pass untouched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from pydantic_core import to_json

from scope_temporal.errors import DefinitionError
from scope_temporal.tools.context import ToolInvocation
from scope_temporal.tools.middleware import CallNext
from scope_temporal.tools.output import ToolOutput, json_form

__all__ = ["OutputMask"]


class OutputMask:
    """Redact results for the model; the user channel keeps the original.

    Args:
        patterns: regular expressions whose matches the model never sees.
        fields: keys of JSON objects (at any depth of a returned value) whose values the
            model never sees.
        replacement: what the model sees instead.

    Raises:
        DefinitionError: an invalid regular expression, or neither patterns nor fields.
    """

    def __init__(
        self, *patterns: str, fields: Iterable[str] = (), replacement: str = "[redacted]"
    ) -> None:
        self.fields = frozenset(fields)
        if not patterns and not self.fields:
            raise DefinitionError("OutputMask needs patterns, fields or both; it masks nothing.")
        try:
            self.patterns = tuple(re.compile(p) for p in patterns)
        except re.error as error:
            raise DefinitionError(
                f"OutputMask: invalid pattern {error.pattern!r}: {error}"
            ) from None
        self.replacement = replacement

    async def __call__(self, invocation: ToolInvocation, call_next: CallNext) -> object:
        value = await call_next(invocation)
        if isinstance(value, ToolOutput):
            masked = self._text(value.for_llm)
            if masked == value.for_llm:
                return value
            for_user = value.for_user if value.for_user is not None else value.for_llm
            return ToolOutput(
                masked,
                for_user=for_user,
                ref=value.ref,
                metadata=value.metadata,
                silent=value.silent,
            )
        original = value if isinstance(value, str) else json_form(value)
        plain = original if isinstance(original, str) else to_json(original).decode()
        fielded = plain if isinstance(original, str) else to_json(self._value(original)).decode()
        masked = self._text(fielded)
        return value if masked == plain else ToolOutput(masked, for_user=original)

    def _text(self, text: str) -> str:
        for pattern in self.patterns:
            text = pattern.sub(self.replacement, text)
        return text

    def _value(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: self.replacement if k in self.fields else self._value(v)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self._value(v) for v in value]
        return value

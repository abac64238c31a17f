"""Delegates: model-visible bindings to another Definition, run as child workflows.

Part of a Definition's declaration (and digest); a delegate's model-call budget and
capabilities are taken from, and never exceed, what its parent holds.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from scope_temporal.errors import DefinitionError
from scope_temporal.frozen import Frozen, freeze_json
from scope_temporal.tools.spec import PERMISSIONS, is_provider_tool_name

DEFAULT_DELEGATE_INPUT_SCHEMA: dict[str, Any] = freeze_json(
    {
        "type": "object",
        "properties": {"task": {"type": "string", "description": "What the delegate should do."}},
        "required": ["task"],
        "additionalProperties": False,
    }
)


def capabilities_of(values: Iterable[str], owner: str) -> frozenset[str]:
    """The permissions `values` name, checked.

    Raises:
        DefinitionError: a name that is not read, write or exec.
    """
    caps = frozenset(values)
    unknown = caps - PERMISSIONS
    if unknown:
        raise DefinitionError(
            f"{owner!r}: unknown capabilities {sorted(unknown)}; use read, write, exec."
        )
    return caps


class Delegate(Frozen):
    """A model-visible binding to another Definition, run as a child workflow.

    Args:
        name: the tool name the model calls.
        description: what the model is told the delegate does.
        definition: name of the child Definition (registered on the same worker).
        max_model_calls: the child's model-call budget (None: the child's own limit).
        capabilities: permissions granted to the child; default the parent's; may only narrow.
        input_schema: JSON schema of the call's arguments (default: `{"task": str}`).
    """

    def __init__(
        self,
        name: str,
        description: str,
        definition: str,
        *,
        max_model_calls: int | None = None,
        capabilities: Iterable[str] | None = None,
        input_schema: dict[str, Any] | None = None,
    ) -> None:
        if not is_provider_tool_name(name):
            raise DefinitionError(
                f"Delegate name {name!r} is not a valid tool name "
                "(letters, digits, '_' or '-', at most 64)."
            )
        if max_model_calls is not None and max_model_calls < 1:
            raise DefinitionError(f"Delegate {name!r}: max_model_calls must be >= 1 or None.")
        schema = input_schema if input_schema is not None else DEFAULT_DELEGATE_INPUT_SCHEMA
        if schema.get("type") != "object":
            raise DefinitionError(
                f"Delegate {name!r}: input_schema must be an object schema ({{'type': 'object'}})."
            )
        self.name = name
        self.description = description
        self.definition = definition
        self.max_model_calls = max_model_calls
        self.capabilities = None if capabilities is None else capabilities_of(capabilities, name)
        self.input_schema: dict[str, Any] = freeze_json(schema)
        self._freeze()

    def declaration(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "definition": self.definition,
            "max_model_calls": self.max_model_calls,
            "capabilities": sorted(self.capabilities) if self.capabilities is not None else None,
            "input_schema": self.input_schema,
        }

"""The two exceptions a tool body raises on purpose, and what each one means.

- `ToolFailure`: the tool *knows* it failed. The outcome is definite: the model sees the
  message as an error result (disposition `failed`) and the call is never re-run.
- `HostFailure`: the tool cannot tell whether its side effect happened. The outcome is
  unknown: the Interaction stops at that call until the host settles it.

Any other exception is treated like `HostFailure`.
"""

from __future__ import annotations

__all__ = ["HostFailure", "ToolFailure"]


class ToolFailure(Exception):
    """A definite, model-visible failure of one tool call.

    Raise it when the tool is sure of the outcome (nothing happened, or the failure is
    the result). The message becomes the content of an `is_error` ToolResult.

    Args:
        message: The text the model sees; write it for the model.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class CodedToolFailure(ToolFailure):
    """A definite failure the framework itself raises with its own code (e.g.
    `tool.mcp.session_lost`) instead of `tool.execution_failed`."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class HostFailure(Exception):
    """The tool's outcome is unknown; the host must investigate and settle the call.

    The message is kept as a diagnostic for the host; the model never sees it.

    Args:
        message: What the host should know (e.g. "payment API timed out after charging").
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

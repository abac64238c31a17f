"""Run one tool call and classify what happened as exactly one `ToolOutcome`.

Whether the call may run at all (a bound tool, a granted permission, arguments that fit,
an approval decision when the policy covers it) is decided before this, once, by the
Interaction's admission, which `scope.tool`'s guard makes again
(`interaction.admission`). Theory of operation, in order (the first step that decides,
decides):

1. Outer middleware (worker-level first, then the tool's own), around:
2. Argument check against `spec.parameters` (as a middleware may have changed them) ->
   `Rejected(tool.input_invalid)`; the body never runs. Then inner middleware, then the
   body (its arguments converted into the parameter types; a value that does not convert
   is also `tool.input_invalid`).
3. What the body (or a middleware) did:
   - returned -> `Succeeded` (str as is; `ToolOutput` split into model-visible content and
     host-side extras; anything else as JSON text), with the deferred tools it advertised;
   - raised `ToolFailure` -> `Failed`: a definite, model-visible error;
   - called `require_tool_input` -> `InputRequired` (its arguments already checked);
   - (a background tool) moved the call to the background -> `Backgrounded`;
   - exceeded `spec.timeout` -> `Unknown(tool.timeout)`;
   - raised anything else (`HostFailure` included) -> `Unknown(tool.execution_failed)`,
     or `Unknown(tool.schema_invalid)` when the tool's own schema, or the response schema
     it gave `require_tool_input`, is not valid.

`asyncio.CancelledError` is never converted: it propagates so the Temporal activity is
reported cancelled; the caller records that call as unknown. Nothing here retries.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from scope_temporal.errors import (
    TOOL_EXECUTION_FAILED,
    TOOL_INPUT_INVALID,
    TOOL_SCHEMA_INVALID,
    TOOL_TIMEOUT,
    DefinitionError,
    InvalidInputRequest,
)
from scope_temporal.tools.context import ToolInputRequired, ToolInvocation, activate
from scope_temporal.tools.decorator import Tool
from scope_temporal.tools.failures import CodedToolFailure, ToolFailure
from scope_temporal.tools.middleware import Middleware, compose, is_inner
from scope_temporal.tools.outcome import (
    AttemptOutcome,
    Backgrounded,
    Failed,
    InputRequired,
    Rejected,
    Unknown,
    succeeded,
)
from scope_temporal.tools.rejections import error_result, invalid_arguments
from scope_temporal.tools.validation import InvalidArguments, validate_arguments

__all__ = ["execute_tool"]

_MAX_DIAGNOSTIC_CHARS = 2000


async def execute_tool(
    tool: Tool[..., Any],
    invocation: ToolInvocation,
    *,
    middleware: Sequence[Middleware] = (),
) -> AttemptOutcome:
    """Execute one admitted tool call once and return its single outcome.

    Args:
        tool: The tool bound under `invocation.call.name`.
        invocation: The call and its identity; current for the body and middleware.
        middleware: Worker-level middleware, run before (outside) the tool's own.

    Returns:
        Exactly one of `Succeeded`, `Failed`, `Rejected`, `InputRequired`, `Unknown`, or
        for a background tool `Backgrounded` (see the module docstring). Advertised tools
        are only on `Succeeded`.

    Raises:
        asyncio.CancelledError: the caller was cancelled; whether the body's side effects
            happened is unknown, so the caller must record the call as unknown.
    """
    call = invocation.call
    layers = (*middleware, *tool.middleware)
    advertised: list[str] = []

    async def body(current: ToolInvocation) -> object:
        with activate(current, advertised):
            return await tool.invoke(current.call.arguments)

    async def validated(current: ToolInvocation) -> object:
        error = validate_arguments(tool.spec.parameters, current.call.arguments)
        if error is not None:
            raise InvalidArguments(error)
        return await compose([m for m in layers if is_inner(m)], body)(current)

    run = compose([m for m in layers if not is_inner(m)], validated)
    limit = tool.spec.timeout
    deadline = asyncio.timeout(limit.total_seconds() if limit is not None else None)
    with activate(invocation, advertised):
        try:
            async with deadline:
                value = await run(invocation)
            if isinstance(value, Backgrounded):
                return value
            return succeeded(call, value, advertised)
        except InvalidArguments as exc:
            return Rejected(result=invalid_arguments(call, exc.error), code=TOOL_INPUT_INVALID)
        except ToolFailure as exc:
            code = exc.code if isinstance(exc, CodedToolFailure) else TOOL_EXECUTION_FAILED
            return Failed(result=error_result(call, exc.message), code=code)
        except ToolInputRequired as request:
            return _input_required(request)
        except TimeoutError as exc:
            if limit is not None and deadline.expired():
                return Unknown(
                    code=TOOL_TIMEOUT,
                    diagnostic=f"TimeoutError: tool '{tool.name}' did not finish within "
                    f"{limit.total_seconds():g} s",
                )
            return _unknown(TOOL_EXECUTION_FAILED, exc)
        except (DefinitionError, InvalidInputRequest) as exc:
            code = TOOL_SCHEMA_INVALID if exc.code == TOOL_SCHEMA_INVALID else TOOL_EXECUTION_FAILED
            return _unknown(code, exc)
        except Exception as exc:  # HostFailure and every unexpected error: unprovable
            return _unknown(TOOL_EXECUTION_FAILED, exc)


def _input_required(request: ToolInputRequired) -> InputRequired:
    return InputRequired(
        prompt=request.prompt, response_schema=request.response_schema, state=request.state
    )


def _unknown(code: str, exc: BaseException) -> Unknown:
    diagnostic = f"{type(exc).__name__}: {exc}"
    if len(diagnostic) > _MAX_DIAGNOSTIC_CHARS:
        diagnostic = diagnostic[: _MAX_DIAGNOSTIC_CHARS - 3] + "..."
    return Unknown(code=code, diagnostic=diagnostic)

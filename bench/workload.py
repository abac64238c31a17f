"""Workload W for the benchmarks, as a scope-temporal Interaction.

W: TURNS model calls; every turn but the last asks for TOOLS_PER_TURN instant read tools;
the model is scripted and instant. The baselines doing the same work without the
framework are in `bench/baselines.py`.
"""

from __future__ import annotations

from collections.abc import Callable

from bench.baselines import TOOLS_PER_TURN, TURNS
from scope_temporal import Definition, ModelRequest, Response, reply, tool
from scope_temporal.definition import ToolCallWorkflows


@tool(permission="read")
def lookup(n: int) -> str:
    """Return a fact."""
    return f"fact {n}"


def plan(request: ModelRequest) -> Response:
    """The scripted model: tool calls until the last turn, then a text reply."""
    turn = sum(1 for m in request.messages if m.role == "assistant")
    if turn < TURNS - 1:
        return reply.tool_calls(
            *[("lookup", {"n": turn * TOOLS_PER_TURN + i}) for i in range(TOOLS_PER_TURN)]
        )
    return reply.text(f"done after {turn} tool turns")


def rounds_plan(tool_name: str, rounds: int) -> Callable[[ModelRequest], Response]:
    """A scripted model calling `tool_name` once per round for `rounds` rounds."""

    def plan(request: ModelRequest) -> Response:
        done = sum(1 for m in request.messages if m.role == "tool")
        if done < rounds:
            return reply.tool_calls((tool_name, {"n": done}))
        return reply.text(f"{done} rounds")

    return plan


def definition(mode: ToolCallWorkflows) -> Definition:
    return Definition(
        f"w-{mode}",
        tools=[lookup],
        max_model_calls=TURNS + 5,
        max_concurrent_tool_calls=TOOLS_PER_TURN,
        tool_call_workflows=mode,
    )


__all__ = ["TOOLS_PER_TURN", "TURNS", "definition", "lookup", "plan", "rounds_plan"]

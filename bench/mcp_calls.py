"""The `mcp` benchmark: the cost of an MCP tool call against the same tool as a local
`@tool` (docs/mcp.md).

Workload W (bench/workload.py: 20 model turns, 3 instant read tools per turn but the
last) in each tool-call mapping, its tool served twice: as the local `@tool` `lookup`,
and by a local MCP server over stdio (bench/mcp_server.py, one process the worker starts
and reuses). The variants are interleaved; median wall time of N runs after a warm-up.
Figures per mapping: `mcp_wall_ms_<mode>_local`, `mcp_wall_ms_<mode>_mcp`, their ratio
`mcp_overhead_ratio_<mode>`, and `mcp_extra_ms_per_call_<mode>`: the difference spread
over W's 57 tool calls.
"""

from __future__ import annotations

import statistics
import sys
import time  # deterministic: timing runs client-side, never in a workflow
import uuid
from collections.abc import Callable
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from bench import workload
from bench.baselines import TOOLS_PER_TURN, TURNS
from scope_temporal import (
    Definition,
    ModelRequest,
    Response,
    ScopeClient,
    ScopeWorker,
    ScriptedModel,
    reply,
)
from scope_temporal.definition import ToolCallWorkflows
from scope_temporal.mcp import McpServer, McpStdio

MODES: tuple[ToolCallWorkflows, ...] = ("always", "on_demand")
ROOT = Path(__file__).resolve().parents[1]
CALLS = (TURNS - 1) * TOOLS_PER_TURN


def _plan(request: ModelRequest) -> Response:
    """W's model, calling the MCP `lookup` (named `bench_lookup` by its prefix) or the
    local one, as the Definition advertises."""
    tool_name = request.tools[0].name
    turn = sum(1 for m in request.messages if m.role == "assistant")
    if turn < TURNS - 1:
        return reply.tool_calls(
            *[(tool_name, {"n": turn * TOOLS_PER_TURN + i}) for i in range(TOOLS_PER_TURN)]
        )
    return reply.text(f"done after {turn} tool turns")


def _mcp_definition(mode: ToolCallWorkflows) -> Definition:
    return Definition(
        f"wmcp-{mode}",
        mcp_servers=[McpServer("bench", permission="read")],
        max_model_calls=TURNS + 5,
        max_concurrent_tool_calls=TOOLS_PER_TURN,
        tool_call_workflows=mode,
    )


async def mcp(env: WorkflowEnvironment, runs: int, figure: Callable[[str, float], None]) -> None:
    """W with local tools against W with MCP tools, in both mappings (see the docstring)."""
    task_queue = f"mcp-{uuid.uuid4().hex[:8]}"  # deterministic: client side
    definitions = [workload.definition(m) for m in MODES] + [_mcp_definition(m) for m in MODES]
    server = McpStdio(sys.executable, ["-m", "bench.mcp_server"], env={"PYTHONPATH": str(ROOT)})
    async with ScopeWorker(
        env.client,
        task_queue=task_queue,
        definitions=definitions,
        tools=[workload.lookup],
        models={"default": ScriptedModel(_plan)},
        mcp_servers={"bench": server},
    ):
        scope = ScopeClient(env.client, task_queue=task_queue)
        names = [f"{kind}-{mode}" for mode in MODES for kind in ("w", "wmcp")]
        walls: dict[str, list[float]] = {name: [] for name in names}
        for attempt in range(runs + 1):  # the first round warms up
            for name in names:
                start = time.perf_counter()
                out = await (await scope.start(name, "go")).result()
                assert out.model_calls == TURNS, out
                if attempt:
                    walls[name].append(time.perf_counter() - start)
        for mode in MODES:
            local = statistics.median(walls[f"w-{mode}"])
            remote = statistics.median(walls[f"wmcp-{mode}"])
            figure(f"mcp_wall_ms_{mode}_local", local * 1000)
            figure(f"mcp_wall_ms_{mode}_mcp", remote * 1000)
            figure(f"mcp_overhead_ratio_{mode}", remote / local)
            figure(f"mcp_extra_ms_per_call_{mode}", (remote - local) * 1000 / CALLS)


__all__ = ["mcp"]

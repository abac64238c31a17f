"""A worker process serving version 1 or 2 of an app whose tools change capability class.

    python -m tests.live.migrate_worker ADDRESS TASK_QUEUE SIDE_EFFECT_FILE OUTPUT_DIR VERSION

Version 1 is the app of `tests.live.task_loss_worker`: `ledger` recoverable, `fragile`
plain. Version 2 changes both: `ledger` becomes plain, with its recoverable implementation
registered retired (for the tasks launched under it), and `fragile` becomes recoverable
(nothing retired: its plain tasks keep their one attempt). Side effects go to
SIDE_EFFECT_FILE, one line each, as in `task_loss_worker`.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from scope_temporal import (
    Definition,
    ModelRequest,
    Response,
    RunHandle,
    RunProgress,
    TaskRun,
    background_tool,
    reply,
)
from tests.live import task_loss_worker
from tests.live.task_loss_worker import Fragile, FragileArgs, Ledger, LedgerArgs, record


def _done(result: Any) -> TaskRun:
    async def work(progress: RunProgress) -> Any:
        await asyncio.sleep(0.2)
        return result

    return TaskRun(work)


@background_tool(name="ledger", foreground_timeout=0.5, heartbeat_timeout=2)
class PlainLedger:
    """Write ledger entries (plain since version 2)."""

    async def start(self, task_id: str, arguments: LedgerArgs, attempt: int) -> RunHandle:
        record(f"plain ledger start {task_id}")
        return _done({"entries": arguments.steps, "by": "plain"})


@background_tool(name="fragile", foreground_timeout=0.5, heartbeat_timeout=2)
class RecoverableFragile:
    """Run something (recoverable since version 2)."""

    async def start(self, task_id: str, arguments: FragileArgs, attempt: int) -> RunHandle:
        record(f"recoverable fragile start {task_id}")
        return _done({"name": arguments.name, "by": "recoverable"})

    async def recover(
        self, task_id: str, arguments: FragileArgs, attempt: int, checkpoint: Any
    ) -> RunHandle:
        record(f"recoverable fragile recover {task_id}")
        return _done({"name": arguments.name, "by": "recoverable"})


CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "ledger": ("ledger", {"steps": 12}),  # moves to the background after 0.5 s
    "ledger now": ("ledger", {"steps": 2, "run_in_background": True}),
    "fragile": ("fragile", {"name": "x", "run_in_background": True}),  # v1: runs 600 s
    "fragile now": ("fragile", {"name": "y", "run_in_background": True}),
}


def plan(request: ModelRequest) -> Response:
    last = request.messages[-1]
    if last.role == "user" and last.text in CALLS:
        return reply.tool_calls(CALLS[last.text])
    return reply.text("launched")


def _definition(tools: list[Any]) -> Definition:
    return Definition("migrate", tools=tools, tool_heartbeat_timeout=timedelta(seconds=2))


VERSIONS: dict[str, tuple[list[Definition], tuple[Any, ...]]] = {
    "1": ([_definition([Ledger, Fragile])], (Ledger, Fragile)),
    "2": (
        [_definition([PlainLedger, RecoverableFragile])],
        (PlainLedger, RecoverableFragile, Ledger.retired()),
    ),
    "2-bare": (  # version 2 deployed without the retired implementation
        [_definition([PlainLedger, RecoverableFragile])],
        (PlainLedger, RecoverableFragile),
    ),
}
"""Each version's Definitions and the tools its worker registers."""


if __name__ == "__main__":
    task_loss_worker.SIDE_EFFECTS[0] = Path(sys.argv[3])
    definitions, tools = VERSIONS[sys.argv[5]]
    address, queue, output = sys.argv[1], sys.argv[2], sys.argv[4]
    asyncio.run(task_loss_worker.main(address, queue, output, definitions, tools, plan))

"""A user's program, type-checked with `mypy --strict` by `tests/unit/test_static_checks.py`.

It must see the real types behind the public names (e.g. `OpenAIChatModel`, loaded lazily
at run time), not `object`. Never run; only checked.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel
from temporalio.client import Client

from scope_temporal import (
    ApprovalDecision,
    ApprovalPolicy,
    ApprovalRecord,
    ApprovalRequest,
    BackgroundTool,
    Definition,
    LocalFileMaterializer,
    Message,
    Model,
    ModelRetry,
    OpenAIChatModel,
    RunHandle,
    RunProgress,
    ScopeClient,
    ScopeWorker,
    TaskRun,
    TaskSnapshot,
    ToolSet,
    background_tool,
    tool,
)


@tool(permission="read")
def lookup(query: str) -> str:
    """Look something up."""
    return query


@tool
async def shout(text: str) -> str:
    """A tool declared bare keeps its parameters' types."""
    return text.upper()


@tool(timeout=1.5, middleware=(), concurrency_key="db", task_queue="gpu")
def measure(size: int) -> int:
    """A tool with options keeps its parameters' types."""
    return size


sized: int = measure(3)
tool_names: list[str] = [shout.name, measure.spec.name]


class ExportArgs(BaseModel):
    table: str


class Exporter:
    """Export a table."""

    async def start(self, task_id: str, arguments: ExportArgs, attempt: int) -> RunHandle:
        async def work(progress: RunProgress) -> dict[str, int]:
            progress.publish("rows", metadata={"message": "counting"})
            return {"rows": 3}

        return TaskRun(work)


# mypy ignores what a class decorator returns: typed code applies background_tool by call
export: BackgroundTool = background_tool(permission="write", foreground_timeout=30)(Exporter)


def build_model() -> Model:
    model = OpenAIChatModel("gpt-4o-mini", base_url="http://localhost:8000/v1", stream=True)
    name: str = model.model
    assert name
    return model


def non_prod(request: ApprovalRequest) -> ApprovalDecision:
    if str(request.arguments.get("table", "")).startswith("prod_"):
        return ApprovalDecision.ask()
    return ApprovalDecision.approve("not production")


def build_worker(client: Client) -> ScopeWorker:
    agent = Definition(
        "agent",
        tools=ToolSet("t", [lookup, export]),
        model_heartbeat_timeout=timedelta(seconds=5),
        approval=ApprovalPolicy.deny_writes(approver=non_prod, otherwise="ask"),
        model_retry=ModelRetry(attempts=3, ambiguous=1),
        fallback_models=("backup",),
        max_total_tokens=200_000,
    )
    bound: tuple[str, ...] = agent.tools.names
    granted: frozenset[str] = agent.capabilities
    assert bound and granted
    return ScopeWorker(
        client,
        definitions=[agent],
        tools=[lookup, export],
        models={"default": build_model(), "backup": build_model()},
        materializer=LocalFileMaterializer("/tmp/task-output"),
    )


async def ask(scope: ScopeClient) -> str:
    handle = await scope.start(
        "agent", [Message.user("hi")], id="user-program", approved_tools=["export"]
    )
    snap = await handle.snapshot()
    for pending in snap.pending_tool_inputs:
        if pending.kind == "approval":
            await handle.answer(pending, "a1", {"decision": "deny", "reason": "not now"})
    decided: list[ApprovalRecord] = [
        e.approval for r in snap.settled_results for e in r.entries if e.approval is not None
    ]
    assert all(d.by in ("person", "approver", "remembered", "policy") for d in decided)
    tasks: list[TaskSnapshot] = snap.tasks
    if tasks and not tasks[0].ended:
        await handle.cancel_task(tasks[0].task_id, "not needed")
    for unknown in snap.unknown_effects:
        if unknown.kind == "model":
            await handle.retry_model_call(unknown)
    out = await handle.result()
    approved: tuple[str, ...] = out.approved_tools
    spent: int = out.usage.total_tokens + snap.usage.models["default"].input_tokens
    return f"{out.text}{','.join(approved)} ({spent} tokens)"

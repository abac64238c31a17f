"""Run context (issue 17 item 2): a JSON object given at start that tools read, delegates
and background tasks inherit, and the model never sees; refused when it is not a JSON
object or is over 16 KiB, before anything starts."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from scope_temporal import (
    Definition,
    Delegate,
    InvalidRunContext,
    Message,
    RunHandle,
    RunProgress,
    ScriptedModel,
    TaskRun,
    background_tool,
    current_tool_call,
    reply,
    run_context,
    tool,
)
from scope_temporal.errors import CONTEXT_INVALID
from scope_temporal.interaction import rules
from scope_temporal.run_context import MAX_RUN_CONTEXT_BYTES, check_run_context
from scope_temporal.testing import LocalRunner

seen: list[tuple[str, dict[str, Any]]] = []


@tool(permission="read")
def whoami() -> str:
    """Who the run acts for."""
    seen.append(("tool", current_tool_call().context))
    return "ok"


class NoArgs(BaseModel):
    pass


class Audit:
    """Audit in the background."""

    async def start(self, task_id: str, arguments: NoArgs, attempt: int) -> RunHandle:
        seen.append(("task start", run_context()))

        async def work(progress: RunProgress) -> str:
            seen.append(("task run", run_context()))
            return "audited"

        return TaskRun(work)


audit = background_tool(permission="read")(Audit)

CONTEXT = {"tenant": "acme", "user_id": "u-7", "tags": ["a", 1, None, True]}


def runner(model: ScriptedModel, child: ScriptedModel | None = None) -> LocalRunner:
    parent = Definition(
        "parent",
        tools=[whoami, audit],
        delegates=[Delegate("helper", "Helps", definition="child")],
        max_concurrent_tool_calls=2,
    )
    kid = Definition("child", model="child", tools=[whoami])
    return LocalRunner(
        definitions=[parent, kid],
        tools=[whoami, audit],
        models={"default": model, "child": child or ScriptedModel([reply.text("-")])},
    )


async def test_tools_delegates_and_background_tasks_read_the_run_context() -> None:
    seen.clear()
    model = ScriptedModel(
        [
            reply.tool_calls(
                ("whoami", {}),
                ("audit", {"run_in_background": True}),
                ("helper", {"task": "help"}),
            ),
            reply.text("done"),
        ]
    )
    child = ScriptedModel([reply.tool_calls(("whoami", {})), reply.text("helped")])
    run = await runner(model, child).start("parent", "go", context=CONTEXT)
    assert (await run.result()).text == "done"
    await run.idle()
    kinds = sorted(kind for kind, _ in seen)
    assert kinds == ["task run", "task start", "tool", "tool"]
    assert all(context == CONTEXT for _, context in seen)
    assert run.snapshot().root.run_context == CONTEXT


async def test_the_model_never_sees_the_run_context() -> None:
    model = ScriptedModel([reply.tool_calls(("whoami", {})), reply.text("done")])
    run = await runner(model).start("parent", "go", context={"secret_marker": "zq-91"})
    await run.result()
    for request in model.requests:
        assert "zq-91" not in "".join(m.model_dump_json() for m in request.messages)
        assert "zq-91" not in "".join(t.model_dump_json() for t in request.tools)


async def test_no_context_is_an_empty_object() -> None:
    seen.clear()
    model = ScriptedModel([reply.tool_calls(("whoami", {})), reply.text("done")])
    run = await runner(model).start("parent", "go")
    await run.result()
    assert seen == [("tool", {})]


@pytest.mark.parametrize(
    "bad",
    [
        ["not", "an", "object"],
        "text",
        {"n": float("nan")},
        {"n": object()},
        {1: "int key"},
        {"big": "x" * MAX_RUN_CONTEXT_BYTES},
    ],
)
async def test_a_context_that_is_not_a_small_json_object_is_refused(bad: Any) -> None:
    model = ScriptedModel([reply.text("never")])
    local = runner(model)
    with pytest.raises(InvalidRunContext) as raised:
        await local.start("parent", "go", context=bad)
    assert raised.value.code == CONTEXT_INVALID
    assert "nothing was started" in raised.value.message
    assert model.requests == []


def test_a_raw_start_with_a_bad_context_is_refused_by_the_machine() -> None:
    definition = Definition("plain")
    with pytest.raises(InvalidRunContext):
        rules.initial_state(
            definition, "p", [Message.user("x")], None, None, run_context={"big": "x" * 20_000}
        )


def test_the_limit_counts_compact_json_bytes() -> None:
    fits = {"k": "é" * ((MAX_RUN_CONTEXT_BYTES - 10) // 2)}
    assert check_run_context(fits) == fits
    with pytest.raises(InvalidRunContext):
        check_run_context({"k": "é" * (MAX_RUN_CONTEXT_BYTES // 2)})

"""A tool that changes capability class (plain <-> recoverable) keeps its tasks valid: each
task runs on an implementation of the class it was launched under (the tool's, or a
retired one registered for its tasks only), or fails with `tool.background.unregistered`
saying what to register; nothing else changes."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from scope_temporal import DefinitionError, RetiredTool, RunHandle, TaskRun, background_tool, tool
from scope_temporal.activities.background import attempt_task
from scope_temporal.background.materializer import MemoryMaterializer
from scope_temporal.background.runtime import BackgroundRuntime, LiveRuns
from scope_temporal.background.serving import serving_tool
from scope_temporal.background.tool import BackgroundTool
from scope_temporal.errors import CODE_KINDS, TASK_UNREGISTERED
from scope_temporal.interaction.task_values import AttemptPlan, AttemptReport
from scope_temporal.payloads import HeartbeatState
from scope_temporal.tools.registry import ToolRegistry
from tests.unit.test_background_machine import machine, report, waiting
from tests.unit.test_readme_examples import block_under

CALLS: list[str] = []


class Args(BaseModel):
    n: int = 0


def _run(label: str) -> TaskRun:
    async def work(progress: Any) -> str:
        return label

    return TaskRun(work)


class _Plain:
    label = "plain"

    async def start(self, task_id: str, arguments: Args, attempt: int) -> RunHandle:
        CALLS.append(f"{self.label} start {attempt}")
        return _run(self.label)


class _Recoverable(_Plain):
    label = "recoverable"

    async def recover(self, task_id: str, arguments: Args, attempt: int, point: Any) -> RunHandle:
        CALLS.append(f"recoverable recover {attempt} {point}")
        return _run("recovered")


PLAIN: BackgroundTool = background_tool(name="job")(_Plain)
RECOVERABLE: BackgroundTool = background_tool(name="job")(_Recoverable)


def plan(capability: Any, mode: Any = "start", **fields: Any) -> AttemptPlan:
    return AttemptPlan(
        task_id="i/task/1/0",
        tool="job",
        arguments="{}",
        mode=mode,
        attempt=2,
        max_attempts=5 if capability == "recoverable" else 1,
        capability=capability,
        **fields,
    )


# --- the registry (pure) ---------------------------------------------------------------


def test_a_task_runs_on_the_implementation_of_the_class_it_was_launched_under() -> None:
    moved_to_plain = ToolRegistry([PLAIN, RECOVERABLE.retired()])
    assert moved_to_plain.implementation("job", "recoverable") is RECOVERABLE
    assert moved_to_plain.implementation("job", "plain") is PLAIN
    moved_to_recoverable = ToolRegistry([RECOVERABLE, PLAIN.retired()])
    assert moved_to_recoverable.implementation("job", "plain") is PLAIN
    assert moved_to_recoverable.implementation("job", "recoverable") is RECOVERABLE


def test_a_plain_task_may_run_on_a_recoverable_implementation_but_not_the_reverse() -> None:
    assert ToolRegistry([RECOVERABLE]).implementation("job", "plain") is RECOVERABLE
    assert ToolRegistry([PLAIN]).implementation("job", "recoverable") is None
    assert ToolRegistry([]).implementation("job", "plain") is None


def test_a_retired_implementation_alone_serves_the_tasks_of_a_removed_tool() -> None:
    registry = ToolRegistry([RECOVERABLE.retired()])
    assert registry.implementation("job", "recoverable") is RECOVERABLE
    assert registry.get("job") is None and "job" not in registry


def test_a_retired_implementation_is_never_a_registered_tool() -> None:
    registry = ToolRegistry([PLAIN, RECOVERABLE.retired()])
    assert registry.get("job") is PLAIN
    assert list(registry) == [PLAIN] and len(registry) == 1
    assert registry.specs() == (PLAIN.spec,)
    assert registry.retired("job") == ("recoverable",)
    assert RECOVERABLE.retired() == RetiredTool(RECOVERABLE)


@pytest.mark.parametrize(
    "tools",
    [
        [PLAIN, PLAIN.retired()],
        [PLAIN.retired(), PLAIN],
        [RECOVERABLE.retired(), PLAIN, RECOVERABLE.retired()],
    ],
)
def test_two_implementations_of_one_class_of_one_tool_are_refused(tools: list[Any]) -> None:
    with pytest.raises(DefinitionError, match="'job'"):
        ToolRegistry(tools)


def test_only_a_background_tool_can_be_retired() -> None:
    @tool
    def lookup(q: str) -> str:
        """Look something up."""
        return q

    with pytest.raises(DefinitionError, match="not a background tool"):
        ToolRegistry([RetiredTool(lookup)])


# --- which implementation an attempt runs on (pure) ------------------------------------


def test_serving_tool_names_what_to_register_when_no_implementation_fits() -> None:
    reason = serving_tool(ToolRegistry([PLAIN]), plan("recoverable", "recover"), recovering=False)
    assert isinstance(reason, str)
    assert "no recoverable implementation of background tool 'job'" in reason
    assert "registers 'job' as plain" in reason
    assert "launched as recoverable" in reason and ".retired()" in reason
    assert "Nothing ran" in reason
    gone = serving_tool(ToolRegistry([]), plan("plain"), recovering=False)
    assert isinstance(gone, str) and "no background tool 'job' is registered" in gone


def test_an_implementation_without_the_method_the_attempt_calls_does_not_serve_it() -> None:
    # a plain task waiting for input, resumed after the tool lost `resume`
    reason = serving_tool(
        ToolRegistry([RECOVERABLE]), plan("plain", "resume", request_id="a"), recovering=False
    )
    assert isinstance(reason, str) and "has no resume(...)" in reason
    # a retry that recovers needs `recover`, whatever the plan's mode
    reason = serving_tool(ToolRegistry([PLAIN]), plan(None), recovering=True)
    assert isinstance(reason, str) and "has no recover(...)" in reason


def test_a_plan_from_before_tasks_recorded_their_class_runs_on_todays_tool() -> None:
    registry = ToolRegistry([PLAIN, RECOVERABLE.retired()])
    assert serving_tool(registry, plan(None), recovering=False) is PLAIN


# --- the task machine (pure) -----------------------------------------------------------


def test_every_attempt_plan_carries_the_class_the_task_was_launched_under() -> None:
    recoverable = machine("recover", recoverable=True)
    first = recoverable.next_attempt()
    assert first is not None and first.capability == "recoverable"
    plain = machine()
    second = plain.next_attempt()
    assert second is not None and second.capability == "plain"


def test_an_unserved_attempt_fails_the_task_with_a_stable_code() -> None:
    m = machine("recover", recoverable=True)
    m.next_attempt()
    m.on_report(report(unserved="no recoverable implementation of 'job'"))
    task = m.snapshot()
    assert (task.status, task.code, task.error) == (
        "failed",
        "tool.background.unregistered",
        "no recoverable implementation of 'job'",
    )
    assert CODE_KINDS[TASK_UNREGISTERED] == "host"


def test_an_answer_an_unserved_resume_carried_is_unapplied() -> None:
    m = waiting()
    wait = m.snapshot().question
    assert wait is not None
    m.answer(wait.wait_id, "a-1", {"n": 3})
    m.next_attempt()
    m.on_report(report(2, unserved="no implementation with resume(...)"))
    assert m.snapshot().code == "tool.background.unregistered"
    assert m.verdict("a-1") == "unapplied"


# --- the attempt, end to end in process ------------------------------------------------


async def attempt(
    tools: list[Any], capability: Any, mode: Any = "start", previous: Any = None
) -> AttemptReport:
    CALLS.clear()
    return await attempt_task(
        plan(capability, mode, checkpoint={"at": 4}),
        attempt=2,
        tools=ToolRegistry(tools),
        runtime=BackgroundRuntime(MemoryMaterializer(), LiveRuns(), None),
        previous=previous,
        beat=lambda state: None,
        tell=_tell,
        heartbeat_every=1,
        stop_on_cancel=lambda: True,
    )


async def _tell(progress: Any, resumed: str | None) -> None:
    return None


async def test_a_recoverable_task_recovers_on_the_retired_implementation() -> None:
    done = await attempt([PLAIN, RECOVERABLE.retired()], "recoverable", "recover")
    assert done.outcome is not None and done.outcome.data == "recovered"
    assert CALLS == ["recoverable recover 2 {'at': 4}"]
    retried = await attempt(
        [PLAIN, RECOVERABLE.retired()],
        "recoverable",
        previous=HeartbeatState(checkpoint={"at": 7}),
    )
    assert retried.outcome is not None and CALLS == ["recoverable recover 2 {'at': 7}"]


async def test_without_the_retired_implementation_nothing_runs_and_no_attribute_error() -> None:
    done = await attempt([PLAIN], "recoverable", "recover")
    assert done.outcome is None and CALLS == []
    assert done.unserved is not None and "AttributeError" not in done.unserved


async def test_a_plain_task_starts_on_the_tool_that_became_recoverable() -> None:
    done = await attempt([RECOVERABLE], "plain")
    assert done.outcome is not None and done.outcome.data == "recoverable"
    assert CALLS == ["recoverable start 2"]
    kept = await attempt([RECOVERABLE, PLAIN.retired()], "plain")
    assert kept.outcome is not None and CALLS == ["plain start 2"]


def test_the_docs_example_registers_the_former_implementation_for_its_tasks_only() -> None:
    page = "docs/background-tools.md"
    namespace: dict[str, Any] = {}
    code = block_under("## Changing a tool's capability class", page)
    exec(compile(code, page, "exec"), namespace)
    registry = ToolRegistry(namespace["tools"])
    ledger, before = namespace["Ledger"], namespace["LedgerBefore"]
    assert registry.get("ledger") is ledger and registry.retired("ledger") == ("recoverable",)
    assert registry.implementation("ledger", "recoverable") is before
    assert registry.implementation("ledger", "plain") is ledger
    assert namespace["books"].tools.get("ledger") == ledger.spec  # the plain one

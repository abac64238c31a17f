"""CONFORMANCE 51: a tool's concurrency classifier decides, per admitted invocation, its
key and whether it may overlap others; a classifier that fails is a typed failure before
any body runs. On the pure core and through LocalRunner."""

from __future__ import annotations

import json
from typing import Any

import pytest

from scope_temporal import (
    Definition,
    DefinitionError,
    InteractionFailed,
    Message,
    ToolInvocation,
    reply,
    tool,
)
from scope_temporal.interaction.effects import StartToolCall
from scope_temporal.testing import LocalRun
from tests.unit.tool_rounds import WAIT, Gates, open_round, runner_with, still_not_started


def by_path(invocation: ToolInvocation) -> tuple[str | None, bool]:
    """Writes to one file never overlap; writes to different files may."""
    return json.loads(invocation.call.arguments)["path"], True


def write_tool(gates: Gates, **options: Any) -> Any:
    @tool(permission="write", **options)
    async def write(path: str, name: str) -> str:
        """Write a file."""
        await gates.hold(name)
        return f"wrote {path}"

    return write


def started(effects: list[Any]) -> list[int]:
    return [e.request.call_index for e in effects if isinstance(e, StartToolCall)]


def test_c51_the_classifier_decides_key_and_overlap_per_invocation_on_the_core() -> None:
    seen: list[ToolInvocation] = []

    def classify(invocation: ToolInvocation) -> tuple[str | None, bool]:
        seen.append(invocation)
        path = json.loads(invocation.call.arguments)["path"]
        return path, path != "/etc/lock"

    write = write_tool(Gates(), concurrency=classify)
    definition = Definition("files", tools=[write], max_concurrent_tool_calls=4)
    machine, effects = open_round(
        definition,
        ("write", {"path": "a", "name": "1"}),
        ("write", {"path": "b", "name": "2"}),
        ("write", {"path": "a", "name": "3"}),
        ("write", {"path": "/etc/lock", "name": "4"}),
    )
    slots = machine.state.round.slots  # type: ignore[union-attr]
    assert [(s.scheduling, s.concurrency_key) for s in slots] == [
        ("parallel", "a"),
        ("parallel", "b"),
        ("parallel", "a"),
        ("exclusive", "/etc/lock"),
    ]
    # a write tool is sequential by default; here the two paths overlap, the shared one waits
    assert started(effects) == [0, 1]
    assert [(i.ref, i.call_index, i.model_call_seq) for i in seen] == [
        (f"p/1/{n}", n, 1) for n in range(4)
    ]
    assert seen[0].process_id == "p/tool/1/0" and seen[0].effect_id == slots[0].effect_id


async def run_writes(classifier: Any, paths: str) -> tuple[Gates, LocalRun]:
    """A run whose model writes to each of `paths` in one batch, call n gated as "n"."""
    gates = Gates()
    write = write_tool(gates, concurrency=classifier)
    definition = Definition("files", tools=[write], max_concurrent_tool_calls=4)
    calls = [("write", {"path": p, "name": str(n)}) for n, p in enumerate(paths, 1)]
    runner = runner_with(definition, [write], [reply.tool_calls(*calls), reply.text("ok")])
    return gates, await runner.start("files", [Message.user("go")])


async def test_c51_different_keys_overlap_one_key_never_does_through_local_runner() -> None:
    gates, run = await run_writes(by_path, "aba")
    await gates.started_all("1", "2")
    await still_not_started(gates, "3")
    await gates.release("1")
    await gates.started_all("3")
    await gates.release("2", "3")
    await run.result(timeout=WAIT)
    assert gates.ran_with("2") == {"1", "3"}
    assert "1" not in gates.ran_with("3")


async def test_c51_concurrent_false_runs_the_call_alone() -> None:
    def alone_for_b(invocation: ToolInvocation) -> tuple[str | None, bool]:
        return None, json.loads(invocation.call.arguments)["path"] != "b"

    gates, run = await run_writes(alone_for_b, "abc")
    await gates.started_all("1")
    await still_not_started(gates, "2")
    await gates.release("1")
    await gates.started_all("2")
    await still_not_started(gates, "3")
    await gates.release("2")
    await gates.started_all("3")
    await gates.release("3")
    await run.result(timeout=WAIT)
    assert gates.ran_with("2") == frozenset()


def _raises(invocation: ToolInvocation) -> tuple[str | None, bool]:
    raise ValueError("no path")


@pytest.mark.parametrize(
    ("classifier", "said"),
    [
        (_raises, "raised ValueError('no path')"),
        (lambda invocation: (7, True), "returned (7, True)"),
        (lambda invocation: ("", True), "returned ('', True)"),
        (lambda invocation: ("k", "yes"), "returned ('k', 'yes')"),
        (lambda invocation: "k", "returned 'k'"),
        (lambda invocation: ("k", True, 1), "returned ('k', True, 1)"),
    ],
)
async def test_c51_a_classifier_that_raises_or_returns_a_bad_key_fails_typed_before_any_body(
    classifier: Any, said: str
) -> None:
    gates = Gates()
    ran: list[str] = []

    @tool(permission="read")
    def look(name: str) -> str:
        """Read."""
        ran.append(name)
        return name

    write = write_tool(gates, concurrency=classifier)
    definition = Definition("files", tools=[look, write], max_concurrent_tool_calls=4)
    runner = runner_with(
        definition,
        [look, write],
        [reply.tool_calls(("look", {"name": "x"}), ("write", {"path": "a", "name": "1"}))],
    )
    run = await runner.start("files", [Message.user("go")])
    with pytest.raises(InteractionFailed) as failed:
        await run.result(timeout=WAIT)
    assert failed.value.code == "interaction.host.failed"
    assert "concurrency classifier" in failed.value.message and said in failed.value.message
    assert "'write'" in failed.value.message
    assert ran == [] and gates.started == []  # no body of the round ran


def test_c51_the_classifier_is_in_the_digest_only_when_set() -> None:
    def by_name(invocation: ToolInvocation) -> tuple[str | None, bool]:
        return invocation.call.name, True

    gates = Gates()
    plain = Definition("files", tools=[write_tool(gates)])
    assert "concurrency" not in plain.declaration()["tools"][0]
    one = Definition("files", tools=[write_tool(gates, concurrency=by_path)])
    other = Definition("files", tools=[write_tool(gates, concurrency=by_name)])
    assert len({plain.digest, one.digest, other.digest}) == 3
    assert one.declaration()["tools"][0]["concurrency"]["name"] == "by_path"


def test_c51_a_classifier_with_execution_or_a_key_or_async_is_refused_at_declaration() -> None:
    async def later(invocation: ToolInvocation) -> tuple[str | None, bool]:
        return None, True

    gates = Gates()
    for options in (
        {"concurrency": by_path, "concurrency_key": "k"},
        {"concurrency": by_path, "execution": "parallel"},
        {"concurrency": later},
        {"concurrency": "by_path"},
    ):
        with pytest.raises(DefinitionError, match="concurrency"):
            write_tool(gates, **options)

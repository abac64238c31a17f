"""CONFORMANCE 55 (typed artifacts), 56 (ToolCallRef parses back), 58 (observer diagnostics
stay bounded): values a host reads, checked on real runs through LocalRunner."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from scope_temporal import (
    ArtifactDecodeError,
    Definition,
    Delegate,
    Message,
    ProtocolError,
    ScriptedModel,
    ToolCallRef,
    reply,
    tool,
)
from scope_temporal.ids import tool_call_ref
from scope_temporal.observers import MAX_KEPT_FAILURES, ObserverHub
from scope_temporal.outputs import Artifact
from scope_temporal.testing import LocalRunner

WAIT = 2.0


class Finding(BaseModel):
    service: str
    errors: int


class Report(BaseModel):
    summary: str
    findings: list[Finding]


async def artifact_of(child_reply: str, output_schema: dict[str, Any] | None) -> Artifact:
    """The Artifact a real delegate call produces when the child replies `child_reply`."""
    child = Definition("reporter", model="child", output_schema=output_schema)
    parent = Definition("parent", delegates=[Delegate("report", "Report", definition="reporter")])
    runner = LocalRunner(
        definitions=[parent, child],
        models={
            "default": ScriptedModel(
                [reply.tool_calls(("report", {"task": "t"})), reply.text("done")]
            ),
            "child": ScriptedModel([reply.text(child_reply)]),
        },
    )
    run = await runner.start("parent", [Message.user("go")])
    [artifact] = (await run.result(timeout=WAIT)).artifacts
    return artifact


async def test_c55_an_artifact_decodes_into_the_declared_type() -> None:
    schema = {"type": "object", "required": ["summary", "findings"]}
    text = '{"summary": "db leak", "findings": [{"service": "db", "errors": 3}]}'
    artifact = await artifact_of(text, schema)
    report = artifact.decode(Report)
    assert report == Report(summary="db leak", findings=[Finding(service="db", errors=3)])
    # without an output schema the child's text is parsed
    assert (await artifact_of(text, None)).decode(Report) == report


async def test_c55_an_artifact_that_does_not_decode_names_the_field_and_keeps_the_raw_data() -> (
    None
):
    text = '{"summary": "db leak", "findings": [{"service": "db", "errors": "many"}]}'
    artifact = await artifact_of(text, {"type": "object"})
    with pytest.raises(ArtifactDecodeError) as raised:
        artifact.decode(Report)
    assert raised.value.field == "findings.0.errors"
    assert raised.value.code == "interaction.artifact.invalid"
    assert "findings.0.errors" in raised.value.message and "report" in raised.value.message
    assert artifact.data["findings"][0]["errors"] == "many"  # the raw value is untouched
    not_json = await artifact_of("the database leaks", None)
    with pytest.raises(ArtifactDecodeError, match="not JSON") as raised:
        not_json.decode(Report)
    assert raised.value.field == ""
    assert not_json.text == "the database leaks"


process_ids = st.lists(
    st.text(st.characters(blacklist_characters="/", blacklist_categories=["Cs"]), min_size=1),
    min_size=1,
    max_size=4,
).map("/".join)


@given(process_ids, st.integers(1, 10**6), st.integers(0, 10**4))
def test_c56_a_tool_call_ref_parses_back_into_its_parts(
    process_id: str, seq: int, index: int
) -> None:
    text = tool_call_ref(process_id, seq, index)
    ref = ToolCallRef.parse(text)
    assert (ref.process_id, ref.model_call_seq, ref.call_index) == (process_id, seq, index)
    assert str(ref) == text


@pytest.mark.parametrize("text", ["x", "x/1", "/1/0", "x/0/0", "x/01/0", "x/1/-1", "x/1/a"])
def test_c56_a_malformed_tool_call_ref_is_refused_with_the_expected_shape(text: str) -> None:
    with pytest.raises(ProtocolError, match="expected '<process id>/<model call seq"):
        ToolCallRef.parse(text)


class Broken:
    """An observer whose every callback raises."""

    def tool_started(self, invocation: Any) -> None:
        raise RuntimeError(f"started {invocation.call.name}")

    def tool_settled(self, invocation: Any, outcome: Any) -> None:
        raise KeyError("settled")


@tool(permission="read", execution="parallel")
def ping(n: int) -> str:
    """Answer."""
    return f"pong {n}"


async def test_c58_observer_failures_are_counted_per_callback_with_bounded_diagnostics() -> None:
    calls = MAX_KEPT_FAILURES  # two failures per call: twice what is kept
    model = ScriptedModel(
        [reply.tool_calls(*[("ping", {"n": i}) for i in range(calls)]), reply.text("done")]
    )
    runner = LocalRunner(
        definitions=[Definition("pinger", tools=[ping], max_concurrent_tool_calls=8)],
        tools=[ping],
        models={"default": model},
        observers=[Broken()],
    )
    run = await runner.start("pinger", [Message.user("go")])
    out = await run.result(timeout=10)
    assert out.model_calls == 2  # no settlement changed
    hub = runner.observers
    assert hub.failure_counts == {"Broken.tool_started": calls, "Broken.tool_settled": calls}
    assert hub.failure_total == 2 * calls
    kept = hub.failures
    assert len(kept) == MAX_KEPT_FAILURES  # the latest ones
    assert all("Traceback" in f.traceback and "raise" in f.traceback for f in kept)
    assert {f.callback for f in kept} <= {"Broken.tool_started", "Broken.tool_settled"}


async def test_c58_the_memory_of_an_observer_hub_does_not_grow_with_failures() -> None:
    hub = ObserverHub([Broken()], keep_failures=5)
    invocation = type("Invocation", (), {"call": type("Call", (), {"name": "x"})()})()
    for _ in range(50):
        await hub.emit("tool_started", invocation=invocation)
    size_after_50 = sys.getsizeof(hub.failures) + sum(
        sys.getsizeof(f.traceback) for f in hub.failures
    )
    for _ in range(5_000):
        await hub.emit("tool_started", invocation=invocation)
    size_after_5050 = sys.getsizeof(hub.failures) + sum(
        sys.getsizeof(f.traceback) for f in hub.failures
    )
    assert hub.failure_counts["Broken.tool_started"] == 5_050
    assert len(hub.failures) == 5
    assert size_after_5050 <= size_after_50 * 1.1

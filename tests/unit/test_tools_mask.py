"""OutputMask (the tools design, seed 001): a result redacted for the model, whole for
the user channel; through the executor and through a LocalRunner run's snapshot."""

from __future__ import annotations

import json
from typing import Any

import pytest

from scope_temporal import Definition, DefinitionError, Message, OutputMask, ToolOutput, reply, tool
from scope_temporal.chat import ToolCall
from scope_temporal.tools import Succeeded, ToolInvocation, execute_tool
from tests.unit.tool_rounds import runner_with, tool_results_sent

SECRETS = OutputMask(r"sk-[A-Za-z0-9]+", fields=["password"])


def invocation(name: str) -> ToolInvocation:
    return ToolInvocation(
        process_id="root/tool/1/0",
        ref="root/1/0",
        model_call_seq=1,
        call_index=0,
        call=ToolCall(id="call-1", name=name, arguments="{}"),
        effect_id="effect-1",
    )


async def outcome_of(value: object, mask: OutputMask = SECRETS) -> Succeeded:
    @tool(name="leak", middleware=[mask])
    def leak() -> Any:
        """Return the value."""
        return value

    outcome = await execute_tool(leak, invocation("leak"))
    assert isinstance(outcome, Succeeded)
    return outcome


async def test_output_mask_redacts_text_for_the_model_and_keeps_it_for_the_user() -> None:
    outcome = await outcome_of("key sk-abc123 and sk-Z9")
    assert outcome.result.content == "key [redacted] and [redacted]"
    assert outcome.for_user == "key sk-abc123 and sk-Z9"


async def test_output_mask_redacts_fields_at_any_depth_of_a_json_value() -> None:
    value = {"user": "ann", "password": "hunter2", "nested": [{"password": 1, "ok": True}]}
    outcome = await outcome_of(value)
    assert json.loads(outcome.result.content) == {
        "user": "ann",
        "password": "[redacted]",
        "nested": [{"password": "[redacted]", "ok": True}],
    }
    assert outcome.for_user == value


async def test_output_mask_keeps_a_tool_outputs_own_user_channel_ref_and_metadata() -> None:
    own = ToolOutput("token sk-abc", for_user={"rows": 3}, ref="r1", metadata={"ms": 4})
    outcome = await outcome_of(own)
    assert outcome.result.content == "token [redacted]"
    assert (outcome.for_user, outcome.ref, outcome.metadata) == ({"rows": 3}, "r1", {"ms": 4})
    bare = await outcome_of(ToolOutput("token sk-abc"))
    assert bare.for_user == "token sk-abc"


async def test_output_mask_passes_a_result_with_nothing_to_redact_unchanged() -> None:
    outcome = await outcome_of({"user": "ann"})
    assert (outcome.result.content, outcome.for_user) == ('{"user":"ann"}', None)


def test_output_mask_refuses_a_bad_pattern_or_nothing_to_mask() -> None:
    with pytest.raises(DefinitionError, match="invalid pattern"):
        OutputMask("(")
    with pytest.raises(DefinitionError, match="masks nothing"):
        OutputMask()


async def test_output_mask_the_model_never_sees_the_secret_the_snapshot_keeps_it() -> None:
    @tool(permission="read", middleware=[SECRETS])
    def credentials() -> str:
        """Fetch credentials."""
        return "api key sk-live42"

    definition = Definition("creds", tools=[credentials])
    runner = runner_with(
        definition, [credentials], [reply.tool_calls(("credentials", {})), reply.text("ok")]
    )
    run = await runner.start("creds", [Message.user("go")])
    await run.result(timeout=2.0)
    [sent] = tool_results_sent(runner, 1)
    assert sent.content == "api key [redacted]"
    assert "sk-live42" not in json.dumps([m.model_dump() for m in run.snapshot().context])
    [entry] = run.snapshot().settled_results[0].entries
    assert entry.for_user == "api key sk-live42"

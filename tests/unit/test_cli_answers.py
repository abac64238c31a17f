"""Answers typed at the terminal, the commands printed for the user, settlements from
`resolve`, and the `inspect` tree, on snapshots of the in-process runner (no Temporal)."""

from __future__ import annotations

import asyncio
from typing import Any

import click
import pytest

from scope_temporal import Message, ScriptedModel, reply
from scope_temporal.cli._answers import Terminal, is_approval, parse_answer
from scope_temporal.cli._app import load_app
from scope_temporal.cli._render import (
    answer_command,
    example_answer,
    render_tree,
    resolve_command,
    schema_hint,
)
from scope_temporal.cli.resolve import settlement_for
from scope_temporal.errors import SettlementMismatch
from scope_temporal.testing import LocalRunner

APPROVAL: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "note": {"type": "string"}},
    "required": ["approved"],
    "additionalProperties": False,
}


def test_an_answer_must_be_json_matching_the_schema() -> None:
    assert parse_answer('{"approved": true, "note": "ok"}', APPROVAL) == (
        {"approved": True, "note": "ok"},
        None,
    )
    value, problem = parse_answer('{"approved": "yes"}', APPROVAL)
    assert value is None
    assert problem == "does not match the schema: approved: 'yes' is not of type 'boolean'"
    assert parse_answer("{nope", APPROVAL)[1].startswith("not JSON (")  # type: ignore[union-attr]
    assert "Additional properties" in str(parse_answer('{"approved": true, "x": 1}', APPROVAL)[1])


def test_approvals_also_take_y_and_n() -> None:
    assert is_approval(APPROVAL)
    assert parse_answer("y", APPROVAL) == (
        {"approved": True, "note": "approved at the terminal"},
        None,
    )
    assert parse_answer(" No ", APPROVAL)[0] == {
        "approved": False,
        "note": "declined at the terminal",
    }
    other = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    assert not is_approval(other)
    assert parse_answer("y", other)[1] is not None


def test_schema_hints_and_examples_show_the_shape() -> None:
    assert schema_hint(APPROVAL) == '{"approved": boolean, "note": string} (required: approved)'
    assert example_answer(APPROVAL) == '{"approved": true, "note": "..."}'
    assert schema_hint({"type": "string"}) == '{"type": "string"}'
    assert example_answer({"enum": ["a", "b"]}) == '"a"'


def _runner(model: ScriptedModel | None = None) -> LocalRunner:
    app = load_app(None)
    return LocalRunner(
        definitions=app.definitions,
        tools=app.tools,
        models={"default": model} if model else app.models,
    )


async def test_inspect_tree_of_a_waiting_interaction_shows_the_answer_command() -> None:
    run = await _runner().start("ops", [Message.user("checkout returns 502, investigate")])
    tree = await run.idle()
    root = tree.root.process_id
    lines = "\n".join(render_tree(tree, ["--address", "temporal:7233"]))
    assert lines.startswith(f"{root} · ops · waiting · 4 model call(s)")
    assert "  user: checkout returns 502, investigate" in lines
    assert (
        '  model #1 → search_logs(query="ERROR"), read_runbook(query="checkout returns 502, …)'
        in lines
    )
    assert '    ✓ search_logs(query="ERROR") succeeded · 13 matching line(s) in 4 log(s)' in lines
    assert "(delegate) succeeded" in lines
    wait = tree.pending_tool_inputs[0]
    assert f"? input wait {wait.wait_id}: Restart payments-worker?" in lines
    expected = answer_command(root, wait, ["--address", "temporal:7233"])
    assert f"answer: {expected}" in lines
    assert expected == (
        f"scope-temporal answer {root} {wait.wait_id} "
        """'{"approved": true, "note": "..."}' --address temporal:7233"""
    )

    await run.answer(wait, "a1", {"approved": True})
    await run.result()
    done = "\n".join(render_tree(run.snapshot()))
    assert "✎ completion validator: The report must state the root cause" in done
    assert "  output:\n    Incident report" in done
    assert "(model response, 8 model call(s), 1 artifact(s))" in done
    [task] = run.snapshot().tasks
    assert (
        f"  background tasks:\n    ✓ export_logs completed · task {task.task_id} · attempt 1 · "
        "4 progress event(s): exported payments-worker (4/4) · " in done
    )


async def test_resolve_builds_settlements_from_the_retained_request() -> None:
    model = ScriptedModel(
        [
            reply.tool_calls(("search_logs", {"query": "ERROR"})),
            TimeoutError("the provider did not answer"),
        ]
    )
    run = await _runner(model).start("ops", [Message.user("go")])
    tree = await run.idle()
    unknown = tree.unknown_effects[0]
    assert unknown.kind == "model"
    lines = "\n".join(render_tree(tree))
    assert f"! unknown outcome of model call #2 of ops (effect {unknown.effect_id})" in lines
    command = resolve_command(tree.root.process_id, unknown)
    assert command == (
        f"scope-temporal resolve {tree.root.process_id} {unknown.effect_id} "
        "--result 'the reply the model gave'"
    )
    with pytest.raises(click.UsageError):
        settlement_for(unknown, "text", "failed", ())
    settlement = settlement_for(unknown, "Root cause: checked by hand.", None, ())
    await run.resolve(unknown, settlement)
    out = await asyncio.wait_for(run.result(), 5)
    assert out.text == "Root cause: checked by hand."

    json_reply = '{"message": {"role": "assistant", "parts": []}, "finish_reason": "stop"}'
    assert settlement_for(unknown, json_reply, None, ()).response.message.parts == ()  # type: ignore[union-attr]


async def test_tool_settlements_check_disposition_and_advertised_tools(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SCOPE_DEMO_UNKNOWN_RESTART", "1")
    run = await _runner().start("ops", [Message.user("checkout returns 502")])
    tree = await run.idle()
    await run.answer(tree.pending_tool_inputs[0], "a1", {"approved": True})
    tree = await run.idle()
    unknown = tree.unknown_effects[0]
    assert unknown.kind == "tool"
    assert "HostFailure: the fleet API connection dropped" in unknown.diagnostic
    failed = settlement_for(unknown, "not restarted", "failed", ())
    assert failed.outcome.kind == "failed" and failed.outcome.result.is_error  # type: ignore[union-attr]
    with pytest.raises(SettlementMismatch):
        settlement_for(unknown, "restarted", "failed", ("open_ticket",))
    with pytest.raises(SettlementMismatch):
        settlement_for(unknown, "restarted", None, ("no_such_tool",))
    await run.resolve(unknown, settlement_for(unknown, "restarted (checked)", None, ()))
    out = await run.result()
    assert "- restart_service: restarted (checked)" in out.text


async def test_terminal_answers_approvals_itself_with_yes() -> None:
    run = await _runner().start("ops", [Message.user("checkout returns 502")])
    wait = (await run.idle()).pending_tool_inputs[0]
    assert await Terminal(auto_approve=True)(wait, "restart_service") == {
        "approved": True,
        "note": "auto-approved by --yes",
    }


async def test_a_json_prompt_is_shown_as_compact_json(capsys: pytest.CaptureFixture[str]) -> None:
    from scope_temporal import Definition, require_tool_input, tool, tool_input_continuation

    @tool(permission="write")
    def migrate() -> str:
        """Ask with a structured prompt."""
        if tool_input_continuation() is None:
            require_tool_input({"migrate": "users", "rows": 120}, APPROVAL)
        return "migrated"

    runner = LocalRunner(
        definitions=[Definition("migrator", tools=[migrate])],
        tools=[migrate],
        models={"default": ScriptedModel([reply.tool_calls(("migrate", {})), reply.text("ok")])},
    )
    run = await runner.start("migrator", [Message.user("go")])
    tree = await run.idle()
    wait = tree.pending_tool_inputs[0]
    shown = '{"migrate":"users","rows":120}'
    assert f"? input wait {wait.wait_id}: {shown}" in "\n".join(render_tree(tree))
    assert await Terminal(auto_approve=True)(wait, "migrate") is not None
    assert f"? migrate asks: {shown}\n" in capsys.readouterr().out

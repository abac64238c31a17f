"""Answers typed at the terminal, the commands printed for the user, settlements from
`resolve`, and the `inspect` tree, on snapshots of the in-process runner (no Temporal)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import click
import pytest

from scope_temporal import Message, ScriptedModel, reply
from scope_temporal.cli._answers import (
    Terminal,
    approval_answer,
    is_approval,
    is_approval_wait,
    parse_answer,
)
from scope_temporal.cli._app import load_app
from scope_temporal.cli._render import (
    answer_command,
    example_answer,
    render_tree,
    resolve_command,
    result_line,
    schema_hint,
)
from scope_temporal.cli.resolve import settlement_for
from scope_temporal.errors import SettlementMismatch
from scope_temporal.testing import LocalRunner
from scope_temporal.tools import tool as tool_

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


RUNNERS: list[LocalRunner] = []


def _runner(model: ScriptedModel | None = None) -> LocalRunner:
    app = load_app(None)
    runner = LocalRunner(
        definitions=app.definitions,
        tools=app.tools,
        models={"default": model} if model else app.models,
        mcp_servers=app.mcp_servers,  # the reference app's MCP time server, if installed
    )
    RUNNERS.append(runner)
    return runner


@pytest.fixture(autouse=True)
async def _close_runners() -> AsyncIterator[None]:
    yield
    while RUNNERS:
        await RUNNERS.pop().aclose()


async def test_inspect_tree_of_a_waiting_interaction_shows_the_answer_command() -> None:
    run = await _runner().start("ops", [Message.user("checkout returns 502, investigate")])
    tree = await run.idle()
    root = tree.root.process_id
    lines = "\n".join(render_tree(tree, ["--address", "temporal:7233"]))
    assert lines.startswith(f"{root} · ops · waiting_input · 4 model call(s)")
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


# --- approval waits (an ApprovalPolicy's): y / a / n with an optional reason ---------------


@tool_(permission="exec")
def restart(name: str) -> str:
    """Restart a service."""
    return f"{name} restarted"


async def _approval_wait() -> tuple[Any, Any]:
    from scope_temporal import ApprovalPolicy, Definition

    runner = LocalRunner(
        definitions=[Definition("ops", tools=[restart], approval=ApprovalPolicy.deny_writes())],
        tools=[restart],
        models={"default": ScriptedModel([reply.tool_calls(("restart", {"name": "web"}))])},
    )
    run = await runner.start("ops", [Message.user("go")])
    [wait] = (await run.idle()).pending_tool_inputs
    assert wait.kind == "approval"
    return run, wait


async def test_an_approval_wait_takes_y_a_or_n_with_an_optional_reason() -> None:
    run, wait = await _approval_wait()
    shown = "\n".join(render_tree(run.snapshot()))
    assert f'? approval wait {wait.wait_id}: Allow restart(name="web")?' in shown
    assert f"answer: scope-temporal answer {run.id} {wait.wait_id} y" in shown
    schema = wait.response_schema
    assert is_approval_wait(schema) and not is_approval(schema)
    assert parse_answer("y", schema) == ({"decision": "approve", "reason": ""}, None)
    assert parse_answer("a fine for today", schema) == (
        {"decision": "approve", "reason": "fine for today", "remember": True},
        None,
    )
    assert parse_answer(" N  not in prod ", schema) == (
        {"decision": "deny", "reason": "not in prod"},
        None,
    )
    assert parse_answer('{"decision": "deny", "reason": "json works"}', schema)[1] is None
    assert "does not match the schema" in str(parse_answer('{"decision": "maybe"}', schema)[1])
    assert "does not match the schema" in str(parse_answer("n " + "x" * 2001, schema)[1])
    assert approval_answer("maybe") is None
    assert answer_command("root", wait) == f"scope-temporal answer root {wait.wait_id} y"


class _Typed(Terminal):
    """A terminal whose lines are given in advance."""

    def __init__(self, *lines: str, auto_approve: bool = False) -> None:
        super().__init__(auto_approve=auto_approve)
        self.lines = list(lines)

    async def readline(self) -> str | None:
        return self.lines.pop(0) if self.lines else None


async def test_the_terminal_asks_y_n_for_an_approval_and_a_reason_for_a_denial(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _run, wait = await _approval_wait()
    assert await _Typed("maybe", "n", "too risky")(wait, "restart") == {
        "decision": "deny",
        "reason": "too risky",
    }
    out = capsys.readouterr().out
    assert '? restart needs approval: Allow restart(name="web")? (exec calls need approval)' in out
    assert "approve? [y/a/n]> " in out and "answer y, a or n" in out
    assert "reason (optional, Enter to skip)> " in out
    assert await _Typed("y")(wait, "restart") == {"decision": "approve", "reason": ""}
    assert await _Typed("a")(wait, "restart") == {
        "decision": "approve",
        "reason": "",
        "remember": True,
    }
    assert await _Typed()(wait, "restart") is None  # no input: the wait stays open
    assert await _Typed(auto_approve=True)(wait, "restart") == {
        "decision": "approve",
        "reason": "approved with --yes",
    }
    assert "approved (--yes)" in capsys.readouterr().out


async def test_a_result_line_says_who_decided_an_approval() -> None:
    run, wait = await _approval_wait()
    await run.answer(wait, "no", {"decision": "deny", "reason": "not now"})
    await run.idle()
    [entry] = run.snapshot().settled_results[0].entries
    line = result_line(entry)
    assert line.startswith('⊘ restart(name="web") rejected · denied by person · Tool')

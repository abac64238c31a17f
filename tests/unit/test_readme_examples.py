"""The README's "Write a tool and an agent" and "Test your agent" examples, and the examples of
docs/background-tools.md and docs/sessions.md, run as written."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def block_under(heading: str, page: str = "README.md") -> str:
    """The first python block after `heading` in `page` (a path from the repository root)."""
    text = (REPO / page).read_text()
    section = text[text.index(heading) :]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, f"{page}: no python block under {heading}"
    return match.group(1)


async def test_write_a_tool_and_test_it_with_local_runner_as_the_readme_shows() -> None:
    definitions = block_under("## Write a tool and an agent")
    test = block_under("## Test your agent without Temporal")
    # the test snippet uses top-level await, as in a notebook or an async test
    code = definitions + "\nasync def readme_test():\n" + textwrap.indent(test, "    ")
    code += "    return out\n"
    namespace: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), namespace)
    out = await namespace["readme_test"]()  # type: ignore[operator]
    assert out.source == "model_response" and out.model_calls == 2
    assert out.text == "Clean /var/log."


async def test_the_session_example_runs_as_written() -> None:
    code = "async def docs_session():\n" + textwrap.indent(
        block_under("## In tests", "docs/sessions.md"), "    "
    )
    code += "    return session\n"
    namespace: dict[str, object] = {}
    exec(compile(code, "docs/sessions.md", "exec"), namespace)
    session = await namespace["docs_session"]()  # type: ignore[operator]
    snap = await session.snapshot()
    assert [t.status for t in snap.turns] == ["completed", "completed"]
    assert snap.run_context == {"user": "ada", "session_id": "chat-42"}


async def test_the_background_tool_example_moves_to_the_background_as_the_docs_say() -> None:
    from scope_temporal import Message, ScriptedModel, reply
    from scope_temporal.testing import LocalRunner

    namespace: dict[str, object] = {}
    page = "docs/background-tools.md"
    exec(compile(block_under("# Background tools", page), page, "exec"), namespace)

    def plan(request: object) -> object:
        last = request.messages[-1]  # type: ignore[attr-defined]
        if last.role == "user":
            return reply.tool_calls(("build", {"target": "app"}))
        envelope = json.loads(last.tool_results[0].content)
        if envelope["type"] == "launch_result":
            return reply.tool_calls(
                ("task_output", {"task_id": envelope["task_id"], "wait_seconds": 10})
            )
        return reply.text(json.dumps(envelope))

    runner = LocalRunner(
        definitions=[namespace["builds"]],  # type: ignore[list-item]
        tools=[namespace["Build"]],
        models={"default": ScriptedModel(plan)},
    )
    run = await runner.start("builds", [Message.user("build app")])
    final = json.loads((await run.result(timeout=10)).text)
    assert (final["type"], final["status"], final["attempt"]) == ("output", "completed", 1)
    assert final["data"] == {"artifact": "app.tar.gz"}
    assert [e["event_id"] for e in final["events"]] == ["step-1", "step-2", "step-3"]


async def test_the_readme_approval_policy_approves_non_prod_and_asks_for_prod() -> None:
    from scope_temporal import Message, ScriptedModel, reply
    from scope_temporal.testing import LocalRunner

    namespace: dict[str, object] = {}
    code = block_under("## Write a tool and an agent") + block_under("### Ask before it acts")
    exec(compile(code, "<README.md: Ask before it acts>", "exec"), namespace)
    tools = [namespace["search_docs"], namespace["restart_service"]]
    runner = LocalRunner(
        definitions=[namespace["guarded"]],  # type: ignore[list-item]
        tools=tools,
        models={
            "default": ScriptedModel(
                [
                    reply.tool_calls(("restart_service", {"name": "web-1"})),
                    reply.tool_calls(("restart_service", {"name": "prod-1"})),
                    reply.text("done"),
                ]
            )
        },
    )
    run = await runner.start("guarded", [Message.user("restart")])
    [pending] = (await run.idle()).pending_tool_inputs
    assert pending.kind == "approval" and pending.prompt["arguments"] == {"name": "prod-1"}
    await run.answer(pending, "no", {"decision": "deny", "reason": "not in prod"})
    assert (await run.result(timeout=5)).text == "done"
    first, second = run.snapshot().settled_results
    assert first.entries[0].result.content == "web-1 restarted"
    assert second.entries[0].disposition == "rejected"

"""What the CLI shows of issue 16: `resolve --retry`, the attempts of a model call that
gave no response, and the tokens a tree used (`inspect`, `run`)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from scope_temporal import Definition, Message, ModelRetry, ModelUnavailable, ScriptedModel, reply
from scope_temporal.chat import Usage
from scope_temporal.cli import main
from scope_temporal.cli._render import output_lines, render_tree
from scope_temporal.testing import LocalRunner

QUICK = ModelRetry(initial_interval=timedelta(milliseconds=1))


def test_resolve_retry_takes_no_result(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["resolve", "ops-1", "ops-1/model/1", "--retry", "--result", "x"]) == 2
    assert "--retry takes no result" in capsys.readouterr().err


def test_resolve_help_tells_about_retry(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["resolve", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--retry" in out and "A tool call is never sent again" in out


async def test_the_tree_shows_attempts_unknowns_to_send_again_and_tokens() -> None:
    answer = reply.text("done").model_copy(
        update={"usage": Usage(input_tokens=1200, output_tokens=34)}
    )
    model = ScriptedModel(
        [ModelUnavailable("Rate limit reached", status=429), TimeoutError("cut"), answer]
    )
    runner = LocalRunner(
        definitions=[Definition("cli", model_retry=QUICK)], models={"default": model}
    )
    run = await runner.start("cli", [Message.user("hi")])
    tree = await run.idle()
    text = "\n".join(render_tree(tree))
    assert (
        "↻ model #1 (default) not called: 429 Rate limit reached → local-1/model/1/retry/1" in text
    )
    assert "scope-temporal resolve local-1 local-1/model/1/retry/1 --retry" in text
    [unknown] = tree.unknown_effects
    await run.retry_model_call(unknown)
    out = await run.result(timeout=5)
    tree = await run.idle()
    text = "\n".join(render_tree(tree))
    assert text.splitlines()[0].endswith("1 model call(s) · 1,234 tokens (1,200 in, 34 out)")
    assert "superseded: sent again by the host → local-1/model/1/retry/2" in text
    assert (
        output_lines(out)[-1]
        == "(model response, 1 model call(s), 1,234 tokens (1,200 in, 34 out))"
    )

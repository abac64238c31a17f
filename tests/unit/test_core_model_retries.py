"""Issue 16 through LocalRunner (the workflows' drivers, both tool-call mappings): a model
that provably did not run is retried after a wait as a new Effect, or fails the
Interaction with its code; fallbacks; the host's `retry_model_call`; the opt-in
automatic re-send; usage in the Output and the snapshot, delegates included; the token
budget. CONFORMANCE 9-11 still hold: what cannot be proven stays unknown.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from scope_temporal import Delegate, ScopeError
from scope_temporal.chat import Message, Response, Usage
from scope_temporal.definition import Definition
from scope_temporal.errors import (
    LIMIT_TOKENS,
    MODEL_CONTEXT_OVERFLOW,
    MODEL_REJECTED,
    MODEL_UNAVAILABLE,
    InteractionFailed,
    SettlementMismatch,
)
from scope_temporal.models import (
    ModelContextOverflow,
    ModelRejected,
    ModelRequest,
    ModelUnavailable,
    ScriptedModel,
    reply,
)
from scope_temporal.models.retry import ModelRetry
from scope_temporal.settle import settle_model_result
from scope_temporal.testing import LocalRunner
from scope_temporal.tools import HostFailure, tool

QUICK = ModelRetry(
    initial_interval=timedelta(milliseconds=5), maximum_interval=timedelta(milliseconds=20)
)


def with_usage(response: Response, tokens_in: int, tokens_out: int) -> Response:
    return response.model_copy(
        update={"usage": Usage(input_tokens=tokens_in, output_tokens=tokens_out)}
    )


@tool(permission="read")
def lookup(query: str) -> str:
    """Look up."""
    return f"found {query}"


@tool(permission="write")
def flaky(x: str) -> str:
    """Its outcome is never known."""
    raise HostFailure("gateway timed out")


def runner(definition: Definition, *more: Definition, **models: ScriptedModel) -> LocalRunner:
    return LocalRunner(definitions=[definition, *more], tools=[lookup, flaky], models=models)


async def test_a_model_not_called_is_retried_as_a_new_effect_and_the_run_completes() -> None:
    model = ScriptedModel(
        [
            ModelUnavailable("Rate limit reached", status=429, retry_after=timedelta(0)),
            ModelUnavailable("Connection refused"),
            reply.text("hello"),
        ]
    )
    run = await runner(Definition("r", model_retry=QUICK), default=model).start(
        "r", [Message.user("hi")]
    )
    out = await run.result(timeout=5)
    assert out.text == "hello" and out.model_calls == 1
    assert [r.model_call_seq for r in model.requests] == [1, 1, 1]
    assert model.requests[0] == model.requests[2]  # the same request each time
    snap = run.snapshot()
    assert [(a.effect_id, a.status) for a in snap.model_attempts] == [
        ("local-1/model/1", 429),
        ("local-1/model/1/retry/1", None),
    ]
    assert snap.unknown_effects == []


@pytest.mark.parametrize(
    ("raised", "code"),
    [
        (ModelRejected("Incorrect API key provided", status=401), MODEL_REJECTED),
        (ModelRejected("The model `nope` does not exist", status=404), MODEL_REJECTED),
        (ModelContextOverflow("context length exceeded", status=400), MODEL_CONTEXT_OVERFLOW),
    ],
    ids=["401", "404", "overflow"],
)
async def test_a_refused_model_call_fails_the_interaction_definitely(
    raised: Exception, code: str
) -> None:
    model = ScriptedModel([raised])
    run = await runner(Definition("d"), default=model).start("d", [Message.user("hi")])
    with pytest.raises(InteractionFailed) as failed:
        await run.result(timeout=5)
    assert failed.value.code == code
    assert len(model.requests) == 1  # never sent again
    snap = run.snapshot()
    assert snap.status == "failed" and snap.unknown_effects == []
    if code == MODEL_CONTEXT_OVERFLOW:
        assert "context_reducer" in failed.value.message


async def test_retries_exhausted_fail_unavailable() -> None:
    model = ScriptedModel([ModelUnavailable("overloaded", status=503)] * 3)
    definition = Definition(
        "x", model_retry=ModelRetry(attempts=3, initial_interval=timedelta(milliseconds=1))
    )
    run = await runner(definition, default=model).start("x", [Message.user("hi")])
    with pytest.raises(InteractionFailed) as failed:
        await run.result(timeout=5)
    assert failed.value.code == MODEL_UNAVAILABLE and len(model.requests) == 3


async def test_fallback_models_take_over_when_the_primary_is_exhausted() -> None:
    primary = ScriptedModel([ModelUnavailable("no", status=429)] * 2)
    backup = ScriptedModel([with_usage(reply.text("from backup"), 5, 2)])
    definition = Definition(
        "fb",
        model_retry=ModelRetry(attempts=2, initial_interval=timedelta(milliseconds=1)),
        fallback_models=("backup",),
    )
    run = await runner(definition, default=primary, backup=backup).start("fb", [Message.user("hi")])
    out = await run.result(timeout=5)
    assert out.text == "from backup"
    assert len(primary.requests) == 2 and len(backup.requests) == 1
    assert out.usage.models == {"backup": Usage(input_tokens=5, output_tokens=2)}


@pytest.mark.parametrize(
    "raised",
    [
        TimeoutError("provider connection reset"),
        ModelUnavailable("nonsense", status=200),  # not an HTTP error: not trusted
        ModelUnavailable("nonsense", retry_after=timedelta(seconds=-1)),
        ModelRejected("nonsense", status=99999),
    ],
    ids=["timeout", "status-200", "negative-wait", "status-99999"],
)
async def test_c9_what_is_not_proven_stays_unknown_with_a_diagnostic(raised: Exception) -> None:
    model = ScriptedModel([raised])
    run = await runner(Definition("u", model_retry=QUICK), default=model).start(
        "u", [Message.user("hi")]
    )
    snap = await run.idle()
    [unknown] = snap.unknown_effects
    assert snap.status == "waiting" and len(model.requests) == 1
    assert unknown.diagnostic.startswith(type(raised).__name__)
    if isinstance(raised, ModelUnavailable | ModelRejected):
        assert "not trusted as 'not called'" in unknown.diagnostic


async def test_the_host_retries_an_unknown_model_call_and_it_is_recorded_superseded() -> None:
    model = ScriptedModel([TimeoutError("worker lost"), reply.text("second try")])
    run = await runner(Definition("h"), default=model).start("h", [Message.user("hi")])
    [unknown] = (await run.idle()).unknown_effects
    await run.retry_model_call(unknown)
    out = await run.result(timeout=5)
    assert out.text == "second try" and out.model_calls == 1
    assert model.requests[0] == model.requests[1]
    [superseded] = run.snapshot().model_attempts
    assert (superseded.effect_id, superseded.outcome, superseded.resent_by) == (
        "local-1/model/1",
        "superseded",
        "host",
    )
    assert superseded.followed_by == "local-1/model/1/retry/1"
    with pytest.raises(SettlementMismatch):  # superseded: nothing to retry any more
        await run.retry_model_call(unknown)


async def test_a_tool_call_is_never_sent_again() -> None:
    model = ScriptedModel([reply.tool_calls(("flaky", {"x": "1"})), reply.text("done")])
    run = await runner(Definition("t", tools=[flaky]), default=model).start(
        "t", [Message.user("go")]
    )
    [unknown] = (await run.idle()).unknown_effects
    assert unknown.kind == "tool"
    with pytest.raises(SettlementMismatch, match="never sent again"):
        await run.retry_model_call(unknown)
    assert (await run.idle()).unknown_effects == [unknown]


async def test_the_opt_in_resends_an_ambiguous_model_call_automatically() -> None:
    model = ScriptedModel([TimeoutError("cut"), TimeoutError("cut again"), reply.text("ok")])
    policy = ModelRetry(ambiguous=2, initial_interval=timedelta(milliseconds=1))
    run = await runner(Definition("auto", model_retry=policy), default=model).start(
        "auto", [Message.user("hi")]
    )
    out = await run.result(timeout=5)
    assert out.text == "ok" and len(model.requests) == 3
    assert [a.resent_by for a in run.snapshot().model_attempts] == ["policy", "policy"]


async def test_c10_an_unknown_retry_is_settled_by_the_host_like_any_other() -> None:
    model = ScriptedModel([ModelUnavailable("busy", status=503), TimeoutError("hung")])
    run = await runner(Definition("s", model_retry=QUICK), default=model).start(
        "s", [Message.user("hi")]
    )
    [unknown] = (await run.idle()).unknown_effects
    assert unknown.effect_id == "local-1/model/1/retry/1"
    request = unknown.request
    assert request.kind == "model"
    await run.resolve(unknown, settle_model_result(request, reply.text("found"), request.messages))
    assert (await run.result(timeout=5)).text == "found"
    assert len(model.requests) == 2


async def test_usage_sums_the_tree_and_a_spent_token_budget_fails_before_a_model_call() -> None:
    def parent(request: ModelRequest) -> Response:
        if request.model_call_seq == 1:
            return with_usage(reply.tool_calls(("helper", {"task": "look"})), 100, 10)
        return with_usage(reply.text("parent done"), 50, 5)

    def child(request: ModelRequest) -> Response:
        return with_usage(reply.text("child done"), 30, 3)

    helper = Definition("helper", model="small")
    root = Definition(
        "root",
        delegates=[Delegate("helper", "helps", definition="helper")],
        max_total_tokens=10_000,
    )
    models = {"default": ScriptedModel(parent), "small": ScriptedModel(child)}
    run = await runner(root, helper, **models).start("root", [Message.user("go")])
    out = await run.result(timeout=5)
    assert out.usage.models == {
        "default": Usage(input_tokens=150, output_tokens=15),
        "small": Usage(input_tokens=30, output_tokens=3),
    }
    assert out.usage.total_tokens == 198
    assert run.snapshot().usage == out.usage

    tight = Definition(
        "root", delegates=[Delegate("helper", "helps", definition="helper")], max_total_tokens=140
    )
    models = {"default": ScriptedModel(parent), "small": ScriptedModel(child)}
    run = await runner(tight, helper, **models).start("root", [Message.user("go")])
    with pytest.raises(InteractionFailed) as failed:
        await run.result(timeout=5)
    assert failed.value.code == LIMIT_TOKENS
    assert "143 tokens" in failed.value.message  # 110 own + 33 of the delegate


async def test_the_worker_refuses_a_definition_whose_fallback_is_not_served() -> None:
    from scope_temporal.tools.registry import ToolRegistry
    from scope_temporal.worker import _check_bindings

    definition = Definition("w", fallback_models=("backup",))
    with pytest.raises(ScopeError, match="'backup'"):
        _check_bindings([definition], ToolRegistry([]), {"default": ScriptedModel([])}, {})
    served = {"default": ScriptedModel([]), "backup": ScriptedModel([])}
    _check_bindings([definition], ToolRegistry([]), served, {})

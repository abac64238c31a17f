"""Issue 16 on the pure machine: retries only where nothing ran, fallbacks, the host's
re-send of an unknown model call, the opt-in automatic re-send, usage and the token budget.

Each test feeds settlements by hand (no driver): the machine asks for a durable wait
(`WaitRetry`) and a new Effect, or fails with the refusal's code, or holds the unknown.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from scope_temporal import errors
from scope_temporal.chat import Message, Usage
from scope_temporal.definition import Definition
from scope_temporal.errors import ProtocolError, SettlementMismatch
from scope_temporal.interaction.effects import (
    CallModel,
    ModelNotRun,
    ModelResend,
    ModelResponded,
    ModelUnknown,
    WaitRetry,
)
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.interaction.retries import MAX_ATTEMPT_RECORDS
from scope_temporal.models import reply
from scope_temporal.models.not_called import NotCalled
from scope_temporal.models.retry import DEFAULT_MODEL_RETRY, ModelRetry
from scope_temporal.settle import settle_model_result

FAST = ModelRetry(initial_interval=timedelta(seconds=1), jitter=0)


def unavailable(status: int | None = 429, after: float | None = None) -> NotCalled:
    return NotCalled(
        code=errors.MODEL_UNAVAILABLE,
        retryable=True,
        message="Rate limit reached" if status else "Connection refused",
        status=status,
        retry_after=None if after is None else timedelta(seconds=after),
    )


def rejected(status: int = 401, overflow: bool = False) -> NotCalled:
    code = errors.MODEL_CONTEXT_OVERFLOW if overflow else errors.MODEL_REJECTED
    return NotCalled(code=code, retryable=False, message="refused ***", status=status)


def started(definition: Definition) -> tuple[InteractionMachine, CallModel]:
    machine = InteractionMachine.start(definition, "p", [Message.user("hi")])
    [effect] = machine.next_effects()
    assert isinstance(effect, CallModel)
    return machine, effect


def not_run(machine: InteractionMachine, effect: CallModel, reason: NotCalled) -> None:
    machine.on_model(ModelNotRun(effect_id=effect.request.effect_id, reason=reason))


def wait_and_retry(machine: InteractionMachine) -> tuple[WaitRetry, CallModel]:
    [wait] = machine.next_effects()
    assert isinstance(wait, WaitRetry)
    assert machine.next_effects() == []  # the wait is asked for once
    machine.retry_due(wait.effect_id)
    [call] = machine.next_effects()
    assert isinstance(call, CallModel)
    return wait, call


def test_a_retryable_refusal_waits_then_sends_a_new_effect_with_the_same_request() -> None:
    machine, first = started(Definition("a", model_retry=FAST))
    not_run(machine, first, unavailable(429))
    assert machine.status == "running" and machine.snapshot().unknown_effects == ()
    wait, second = wait_and_retry(machine)
    assert (wait.effect_id, wait.retry, wait.reason, wait.delay) == (
        "p/model/1/retry/1",
        1,
        "429",
        timedelta(seconds=1),
    )
    assert second.request.effect_id == "p/model/1/retry/1"
    retry = {"effect_id": "p/model/1/retry/1", "attempt": 2}  # a new Effect: attempt 2 (c56)
    assert second.request == first.request.model_copy(update=retry)
    machine.on_model(ModelResponded(effect_id=second.request.effect_id, response=reply.text("ok")))
    out = machine.output
    assert out is not None and out.model_calls == 1  # retries are attempts of one call
    [attempt] = machine.snapshot().model_attempts
    assert (attempt.effect_id, attempt.outcome, attempt.status, attempt.followed_by) == (
        "p/model/1",
        "not_called",
        429,
        "p/model/1/retry/1",
    )


def test_backoff_doubles_up_to_the_maximum_and_honours_retry_after() -> None:
    policy = ModelRetry(
        attempts=6,
        initial_interval=timedelta(seconds=1),
        maximum_interval=timedelta(seconds=5),
        jitter=0,
    )
    machine, call = started(Definition("b", model_retry=policy))
    delays = []
    for after in (None, None, 30.0, None, None):
        not_run(machine, call, unavailable(503, after))
        wait, call = wait_and_retry(machine)
        delays.append(wait.delay.total_seconds())
    assert delays == [1, 2, 30, 5, 5]


def test_jitter_only_lengthens_and_is_the_same_on_every_replay() -> None:
    policy = ModelRetry(jitter=0.5)
    waits = {policy.backoff(3, f"p/model/1/retry/{n}") for n in range(20)}
    assert all(timedelta(seconds=4) <= w <= timedelta(seconds=6) for w in waits)
    assert len(waits) > 1
    assert policy.backoff(3, "x") == ModelRetry(jitter=0.5).backoff(3, "x")


def test_exhausted_retries_fail_unavailable_with_the_attempts_in_the_message() -> None:
    machine, call = started(Definition("c", model_retry=ModelRetry(attempts=3, jitter=0)))
    for _ in range(2):
        not_run(machine, call, unavailable(None))
        wait, call = wait_and_retry(machine)
        assert wait.reason == "no connection"
    not_run(machine, call, unavailable(None))
    failure = machine.failure
    assert failure is not None and failure.code == errors.MODEL_UNAVAILABLE
    assert "3 attempt(s)" in failure.message and "Nothing ran" in failure.message
    assert machine.snapshot().unknown_effects == ()
    assert [a.followed_by for a in machine.snapshot().model_attempts][-1] is None


@pytest.mark.parametrize(
    ("reason", "code"),
    [
        (rejected(401), errors.MODEL_REJECTED),
        (rejected(404), errors.MODEL_REJECTED),
        (rejected(400, overflow=True), errors.MODEL_CONTEXT_OVERFLOW),
    ],
    ids=["401", "404", "overflow"],
)
def test_a_permanent_refusal_fails_at_once_with_its_code(reason: NotCalled, code: str) -> None:
    machine, call = started(Definition("d"))
    not_run(machine, call, reason)
    failure = machine.failure
    assert failure is not None and failure.code == code
    assert machine.next_effects() == []
    if code == errors.MODEL_CONTEXT_OVERFLOW:
        assert "context_reducer" in failure.message


def test_a_retry_after_over_the_cap_is_not_waited_for() -> None:
    policy = ModelRetry(max_retry_after=timedelta(seconds=10))
    machine, call = started(Definition("e", model_retry=policy))
    not_run(machine, call, unavailable(429, after=3600))
    failure = machine.failure
    assert failure is not None and failure.code == errors.MODEL_UNAVAILABLE
    assert "max_retry_after" in failure.message


def test_fallback_models_are_tried_in_order_once_the_primary_is_exhausted() -> None:
    definition = Definition(
        "f", model_retry=ModelRetry(attempts=2, jitter=0), fallback_models=("b1", "b2")
    )
    machine, call = started(definition)
    not_run(machine, call, unavailable(429))
    _, call = wait_and_retry(machine)
    not_run(machine, call, unavailable(429))
    [call] = machine.next_effects()  # the first fallback at once, no wait
    assert isinstance(call, CallModel)
    assert (call.request.model, call.request.effect_id) == ("b1", "p/model/1/retry/2")
    not_run(machine, call, rejected(404))  # permanent: the next fallback
    [call] = machine.next_effects()
    assert isinstance(call, CallModel) and call.request.model == "b2"
    not_run(machine, call, rejected(401))
    failure = machine.failure
    assert failure is not None and failure.code == errors.MODEL_REJECTED
    assert "Tried: default: 429 x2, b1: 404 x1, b2: 401 x1" in failure.message


def test_seam_09_each_fallback_models_retries_back_off_from_the_initial_interval() -> None:
    policy = ModelRetry(
        attempts=10,
        initial_interval=timedelta(seconds=1),
        maximum_interval=timedelta(seconds=60),
        jitter=0,
    )
    machine, call = started(Definition("f9", model_retry=policy, fallback_models=("backup",)))
    waits: dict[str, list[float]] = {}
    for _ in range(9 + 3):  # the primary's 9 retries, then the backup's first 3
        model = call.request.model
        not_run(machine, call, unavailable(429))
        effects = machine.next_effects()
        if isinstance(effects[0], CallModel):  # the primary is exhausted: the backup at once
            [call] = effects
            continue
        [wait] = effects
        assert isinstance(wait, WaitRetry)
        waits.setdefault(model, []).append(wait.delay.total_seconds())
        machine.retry_due(wait.effect_id)
        [call] = machine.next_effects()
        assert isinstance(call, CallModel)
    assert waits["default"] == [1, 2, 4, 8, 16, 32, 60, 60, 60]
    assert waits["backup"] == [1, 2]


def test_a_fallback_that_answers_completes_and_its_usage_counts_under_its_name() -> None:
    machine, call = started(Definition("g", fallback_models=("backup",)))
    not_run(machine, call, rejected(401))
    [call] = machine.next_effects()
    assert isinstance(call, CallModel)
    response = reply.text("hi").model_copy(update={"usage": Usage(input_tokens=7, output_tokens=3)})
    machine.on_model(ModelResponded(effect_id=call.request.effect_id, response=response))
    out = machine.output
    assert out is not None
    assert out.usage.models == {"backup": Usage(input_tokens=7, output_tokens=3)}


def test_an_unknown_outcome_is_held_by_default_never_retried() -> None:
    machine, call = started(Definition("h"))
    machine.on_model(ModelUnknown(effect_id=call.request.effect_id, diagnostic="APITimeoutError"))
    assert machine.status == "waiting" and machine.next_effects() == []
    [unknown] = machine.snapshot().unknown_effects
    assert unknown.effect_id == "p/model/1" and unknown.diagnostic == "APITimeoutError"


def test_the_host_resends_an_unknown_call_as_a_new_effect_and_it_is_recorded_superseded() -> None:
    machine, call = started(Definition("i"))
    machine.on_model(ModelUnknown(effect_id=call.request.effect_id, diagnostic="worker lost"))
    machine.resolve(ModelResend(request=call.request))
    [again] = machine.next_effects()  # at once: the host chose
    assert isinstance(again, CallModel)
    assert again.request.effect_id == "p/model/1/retry/1"
    assert again.request.messages == call.request.messages
    [superseded] = machine.snapshot().model_attempts
    assert (superseded.outcome, superseded.resent_by, superseded.message) == (
        "superseded",
        "host",
        "worker lost",
    )
    # the superseded one can no longer be settled or sent again
    with pytest.raises(SettlementMismatch):
        machine.resolve(ModelResend(request=call.request))
    with pytest.raises(ProtocolError):
        machine.on_model(ModelResponded(effect_id=call.request.effect_id, response=reply.text("x")))
    # an unknown re-send is held again, settled by the host from its own request
    machine.on_model(ModelUnknown(effect_id=again.request.effect_id, diagnostic="again"))
    held = machine.snapshot().unknown_effects[0].request
    assert held.effect_id == "p/model/1/retry/1"
    machine.resolve(settle_model_result(held, reply.text("done"), held.messages))
    assert machine.output is not None and machine.output.text == "done"


def test_a_resend_needs_the_held_request() -> None:
    machine, call = started(Definition("j"))
    with pytest.raises(SettlementMismatch):  # nothing is unknown yet
        machine.check_resolution(ModelResend(request=call.request))
    machine.on_model(ModelUnknown(effect_id=call.request.effect_id, diagnostic="x"))
    other = call.request.model_copy(update={"effect_id": "p/model/9"})
    with pytest.raises(SettlementMismatch):
        machine.resolve(ModelResend(request=other))
    assert machine.status == "waiting"


def test_the_opt_in_resends_an_unknown_call_after_a_wait_a_bounded_number_of_times() -> None:
    policy = ModelRetry(ambiguous=2, jitter=0)
    machine, call = started(Definition("k", model_retry=policy))
    for n in (1, 2):
        machine.on_model(ModelUnknown(effect_id=call.request.effect_id, diagnostic=f"cut {n}"))
        assert machine.status == "running"
        wait, call = wait_and_retry(machine)
        assert (wait.reason, wait.retry) == ("unknown outcome", n)
    machine.on_model(ModelUnknown(effect_id=call.request.effect_id, diagnostic="cut 3"))
    assert machine.status == "waiting"  # the re-sends are spent: the host decides
    attempts = machine.snapshot().model_attempts
    assert [(a.outcome, a.resent_by) for a in attempts] == [("superseded", "policy")] * 2


def test_retries_do_not_count_against_max_model_calls() -> None:
    machine, call = started(Definition("l", max_model_calls=1, model_retry=FAST))
    not_run(machine, call, unavailable())
    _, call = wait_and_retry(machine)
    machine.on_model(ModelResponded(effect_id=call.request.effect_id, response=reply.text("ok")))
    assert machine.output is not None


def test_a_wait_for_another_attempt_is_refused_and_changes_nothing() -> None:
    machine, call = started(Definition("m", model_retry=FAST))
    with pytest.raises(ProtocolError):
        machine.retry_due("p/model/1/retry/1")  # no wait runs in phase model
    not_run(machine, call, unavailable())
    [wait] = machine.next_effects()
    with pytest.raises(ProtocolError):
        machine.retry_due("p/model/1/retry/7")
    assert machine.state.phase == "backoff"
    machine.retry_due(wait.effect_id)
    assert machine.state.phase == "model"


def test_a_paused_interaction_starts_its_wait_and_its_retry_only_once_resumed() -> None:
    machine, call = started(Definition("n", model_retry=FAST))
    machine.pause()
    not_run(machine, call, unavailable())
    assert machine.next_effects() == [] and machine.status == "paused"
    machine.resume()
    wait, _ = wait_and_retry(machine)
    assert wait.retry == 1


def test_attempt_records_stay_bounded() -> None:
    policy = ModelRetry(attempts=MAX_ATTEMPT_RECORDS + 20, jitter=0)
    machine, call = started(Definition("o", model_retry=policy))
    for _ in range(MAX_ATTEMPT_RECORDS + 10):
        not_run(machine, call, unavailable())
        _, call = wait_and_retry(machine)
    attempts = machine.snapshot().model_attempts
    assert len(attempts) == MAX_ATTEMPT_RECORDS
    assert attempts[-1].followed_by == call.request.effect_id


def test_usage_is_summed_per_model_and_a_spent_budget_fails_before_the_next_call() -> None:
    machine, call = started(Definition("q", max_total_tokens=100))
    used = Usage(input_tokens=80, output_tokens=25)
    calls_reply = reply.tool_calls(("missing", {})).model_copy(update={"usage": used})
    machine.on_model(ModelResponded(effect_id=call.request.effect_id, response=calls_reply))
    assert machine.usage.total_tokens == 105
    assert machine.next_effects() == []  # the round settled at admission; the budget is spent
    failure = machine.failure
    assert failure is not None and failure.code == errors.LIMIT_TOKENS
    assert "105 tokens (80 in, 25 out)" in failure.message
    assert "max_total_tokens=100" in failure.message
    assert failure.usage is not None and failure.usage.total_tokens == 105


def test_model_options_are_validated_and_enter_the_digest_only_when_set() -> None:
    plain = Definition("r")
    assert plain.model_retry == DEFAULT_MODEL_RETRY
    assert "model_retry" not in plain.declaration()
    assert Definition("r", model_retry=ModelRetry()).digest == plain.digest
    assert Definition("r", model_retry=ModelRetry(attempts=2)).digest != plain.digest
    assert Definition("r", fallback_models=("b",)).digest != plain.digest
    assert Definition("r", max_total_tokens=10).digest != plain.digest
    for bad in (
        lambda: ModelRetry(attempts=0),
        lambda: ModelRetry(ambiguous=-1),
        lambda: ModelRetry(initial_interval=timedelta(0)),
        lambda: ModelRetry(jitter=2),
        lambda: Definition("r", fallback_models=("default",)),
        lambda: Definition("r", fallback_models=("b", "b")),
        lambda: Definition("r", fallback_models="b"),  # type: ignore[arg-type]
        lambda: Definition("r", max_total_tokens=0),
    ):
        with pytest.raises(errors.DefinitionError):
            bad()


FORGED_RESENDS = {
    "another effect": {"effect_id": "p/model/9"},
    "another model": {"model": "cheaper"},
    "other messages": {"messages": (Message.user("something else"),)},
    "another definition": {"definition": "other"},
}


@pytest.mark.parametrize("forged", sorted(FORGED_RESENDS))
def test_a_forged_resend_is_refused_and_changes_nothing(forged: str) -> None:
    machine, call = started(Definition("s"))
    machine.on_model(ModelUnknown(effect_id=call.request.effect_id, diagnostic="lost"))
    before = machine.state
    resend = ModelResend(request=call.request.model_copy(update=FORGED_RESENDS[forged]))
    with pytest.raises(SettlementMismatch):
        machine.resolve(resend)
    assert machine.state == before and machine.status == "waiting"


def test_a_tool_request_cannot_be_resent() -> None:
    from pydantic import ValidationError

    from scope_temporal.interaction.effects import ToolEffectRequest

    fields = dict.fromkeys(("definition", "digest", "process_id", "parent_id", "effect_id"), "x")
    request = ToolEffectRequest.model_validate(
        {**fields, "ref": "x/1/0", "model_call_seq": 1, "call_index": 0, "granted": ()}
        | {"call": {"id": "c", "name": "t", "arguments": "{}"}}
    )
    with pytest.raises(ValidationError):
        ModelResend.model_validate({"request": request.model_dump()})


@pytest.mark.parametrize(
    "reason",
    [
        NotCalled(
            code=errors.MODEL_UNAVAILABLE,
            retryable=True,
            message="",
            retry_after=timedelta(seconds=-5),
        ),
        NotCalled(code=errors.MODEL_UNAVAILABLE, retryable=True, message="x", status=99999),
        NotCalled(
            code=errors.MODEL_UNAVAILABLE,
            retryable=True,
            message="x",
            retry_after=timedelta(days=3650),
        ),
        NotCalled(code=errors.MODEL_REJECTED, retryable=True, message="x" * 100_000),
    ],
    ids=["negative-wait", "status-99999", "ten-years", "huge-message"],
)
def test_odd_not_called_values_from_an_activity_never_crash_the_machine(
    reason: NotCalled,
) -> None:
    machine, call = started(Definition("t", model_retry=ModelRetry(attempts=2, jitter=0)))
    not_run(machine, call, reason)
    if machine.failure is None:  # retried after a sane wait
        [wait] = machine.next_effects()
        assert isinstance(wait, WaitRetry) and timedelta(0) < wait.delay <= timedelta(minutes=5)
    else:  # given up, with the refusal's code
        assert machine.failure.code in (errors.MODEL_UNAVAILABLE, errors.MODEL_REJECTED)
    assert machine.state.phase != "failed" or machine.failure is not None

"""Issue 16 live: every row of the provable-outcomes table (docs/models.md) through a worker
on the dev server, in both tool-call mappings.

The worker serves `OpenAIChatModel(base_url=...)` against a real chat-completions server
on loopback (`ChatCompletionsServer`; no mock of `openai` or `httpx`), which answers each
Interaction from its own steps, chosen by the Interaction's prompt. The models hold the
fault workers' API key and the servers echo it in error bodies: the suite's history scan
(`test_zz_replay`) checks that only `***` reaches history.

- retried, then succeeded: 429 with Retry-After, 503 / 408 / 409 with an error body, a
  malformed Retry-After (a durable timer, then a new Effect), and a refused connection
  (then a fallback model);
- failed definitely: 400, 401, 403, 404, 413, 422, a 429 for an exhausted quota, a
  context overflow (naming `context_reducer`), a body of another shape, a Retry-After
  longer than `max_retry_after` (capped, then not waited for);
- unknown, never sent again: 500, 502, 504, a bare 429 / 503, a hang (timeout), a garbled
  body, a 429 whose body is not a provider's error, a stream cut short, an error event in
  a stream; the host then re-sends one with
  `retry_model_call` and another with `scope-temporal resolve --retry`;
- a worker SIGKILLed mid-model-call, then the host's `retry_model_call`.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import uuid
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment

from scope_temporal import (
    Definition,
    InteractionFailed,
    InteractionHandle,
    ModelRetry,
    OpenAIChatModel,
    Output,
    ScopeClient,
    TreeSnapshot,
    reply,
)
from scope_temporal.cli import main
from scope_temporal.errors import MODEL_CONTEXT_OVERFLOW, MODEL_REJECTED, MODEL_UNAVAILABLE
from scope_temporal.testing import (
    ChatCompletionsServer,
    CutStream,
    ErrorReply,
    Hang,
    RawReply,
    RawStream,
    ReceivedRequest,
    Step,
    refused_base_url,
)
from tests.faults.scenario import SECRET
from tests.live.harness import (
    ECHOED_KEY_QUEUES,
    STARTED_IDS,
    TOOL_CALL_MODE,
    eventually,
    serving,
)
from tests.live.test_live_worker_loss import address_of, worker_process

ECHO = f"Incorrect API key provided: {SECRET}."
"""What a provider says to a bad key: the key itself, which must never reach history."""
MASKED = "Incorrect API key provided: ***"
QUICK = ModelRetry(
    initial_interval=timedelta(milliseconds=200), maximum_interval=timedelta(seconds=1), jitter=0
)


def chat_model(
    base_url: str, *, stream: bool = False, timeout: timedelta = timedelta(seconds=20)
) -> OpenAIChatModel:
    """The loopback model. The timeout is short only where a row hangs on purpose: a loaded
    machine (the full suite on 2 cores) can take seconds to answer, and a timed-out call is
    an unknown Effect the Interaction then holds, which a test waiting for a definite
    outcome would wait for forever."""
    return OpenAIChatModel(
        "loopback", base_url=base_url, api_key=SECRET, stream=stream, timeout=timeout
    )


async def definite_outcome(handle: InteractionHandle) -> object:
    """The Interaction's result (or its `InteractionFailed`), failing with what it holds
    instead of waiting forever when it is held on an unknown Effect."""
    try:
        return await asyncio.wait_for(handle.result(), timeout=60)
    except InteractionFailed as failed:
        return failed
    except TimeoutError:
        snap = await handle.snapshot()
        held = [(u.kind, u.diagnostic) for u in snap.unknown_effects]
        raise AssertionError(f"{handle.id} is {snap.status}, holding {held}") from None


def per_prompt(rows: Mapping[str, Sequence[Step]]) -> ChatCompletionsServer:
    """A server answering each Interaction from its row's steps (by its first user
    message), in order; past its steps, HTTP 500."""
    steps = {prompt: list(row) for prompt, row in rows.items()}
    lock = threading.Lock()

    def answer(request: ReceivedRequest) -> Step:
        first = next(m for m in request.body["messages"] if m["role"] == "user")
        with lock:
            row = steps.get(first["content"], [])
            return row.pop(0) if row else ErrorReply(500, "no step left for this prompt")

    return ChatCompletionsServer(answer)


def asked(server: ChatCompletionsServer, prompt: str) -> int:
    """Requests the server received for one Interaction."""
    return sum(
        1
        for r in server.received
        if isinstance(r.body, dict)
        and next(m for m in r.body["messages"] if m["role"] == "user")["content"] == prompt
    )


async def start_all(
    scope: ScopeClient, definition: str, prompts: Sequence[str]
) -> dict[str, InteractionHandle]:
    return {
        p: await scope.start(definition, p, id=f"{definition}-{uuid.uuid4().hex[:8]}")
        for p in prompts
    }


async def history_summaries(handle: InteractionHandle) -> list[tuple[str, str]]:
    """(event, summary) of the root's model activities and timers, in order."""
    client = handle.scope.client
    found = []
    async for event in client.get_workflow_handle(handle.id).fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            name = event.activity_task_scheduled_event_attributes.activity_type.name
            if name == "scope.model":
                found.append(("activity", json.loads(event.user_metadata.summary.data)))
        elif event.event_type == EventType.EVENT_TYPE_TIMER_STARTED:
            timer = event.timer_started_event_attributes.start_to_fire_timeout.ToTimedelta()
            summary = json.loads(event.user_metadata.summary.data)
            found.append(("timer", f"{summary} ({timer.total_seconds():g}s)"))
    return found


# --- retried, then succeeded ---------------------------------------------------------------


RETRIED: dict[str, tuple[Step, str]] = {
    "429 with Retry-After": (
        ErrorReply(429, "Rate limit reached", "rate_limit_error", headers={"Retry-After": "1"}),
        "429",
    ),
    "503 with a body": (ErrorReply(503, "The engine is overloaded", "server_error"), "503"),
    "408 with a body": (ErrorReply(408, "Request timed out", "timeout"), "408"),
    "409 with a body": (ErrorReply(409, "Conflict, try again", "conflict"), "409"),
    "429 with a malformed Retry-After": (  # unreadable: the backoff alone decides
        ErrorReply(429, "Rate limit reached", headers={"Retry-After": "soon, maybe"}),
        "429",
    ),
}


async def test_refused_for_now_is_retried_after_a_durable_timer_as_a_new_effect(
    temporal_env: WorkflowEnvironment,
) -> None:
    rows = {
        prompt: [step, reply.text(f"answered after {label}")]
        for prompt, (step, label) in RETRIED.items()
    }
    with per_prompt(rows) as server:
        definition = Definition("rows-retried", model_retry=QUICK)
        async with serving(
            temporal_env, [definition], models={"default": chat_model(server.base_url)}
        ) as scope:
            handles = await start_all(scope, "rows-retried", list(RETRIED))
            outputs = {p: await definite_outcome(h) for p, h in handles.items()}
            snaps = {p: await h.snapshot() for p, h in handles.items()}
        for prompt, (_, label) in RETRIED.items():
            assert isinstance(outputs[prompt], Output), outputs[prompt]
            assert outputs[prompt].text == f"answered after {label}"
            assert outputs[prompt].model_calls == 1
            assert asked(server, prompt) == 2
            [attempt] = snaps[prompt].model_attempts
            assert (attempt.outcome, str(attempt.status), attempt.model) == (
                "not_called",
                label,
                "default",
            )
            assert attempt.followed_by == f"{handles[prompt].id}/model/1/retry/1"
        [limited] = snaps["429 with Retry-After"].model_attempts
        assert limited.retry_after == timedelta(seconds=1)
        assert await history_summaries(handles["429 with Retry-After"]) == [
            ("activity", "model #1: default"),
            ("timer", "model #1 · retry 1 after 429 (1s)"),  # Retry-After over the 0.2 s backoff
            ("activity", "model #1: default · retry 1"),
        ]


async def test_a_refused_connection_is_retried_then_the_fallback_model_answers(
    temporal_env: WorkflowEnvironment,
) -> None:
    definition = Definition(
        "rows-refused",
        model_retry=ModelRetry(attempts=2, initial_interval=timedelta(milliseconds=100), jitter=0),
        fallback_models=("backup",),
    )
    with (
        refused_base_url() as nowhere,
        ChatCompletionsServer([reply.text("from the backup")]) as up,
    ):
        models = {"default": chat_model(nowhere), "backup": chat_model(up.base_url)}
        async with serving(temporal_env, [definition], models=models) as scope:
            handle = await scope.start("rows-refused", "anyone there?")
            out = await handle.result()
            snap = await handle.snapshot()
    assert out.text == "from the backup" and len(up.received) == 1
    assert [(a.model, a.status, a.code) for a in snap.model_attempts] == [
        ("default", None, "interaction.model.unavailable"),
        ("default", None, "interaction.model.unavailable"),
    ]
    assert await history_summaries(handle) == [
        ("activity", "model #1: default"),
        ("timer", "model #1 · retry 1 after no connection (0.1s)"),
        ("activity", "model #1: default · retry 1"),
        ("activity", "model #1: backup · retry 2"),  # the fallback at once
    ]


# --- failed definitely -----------------------------------------------------------------------


REFUSED: dict[str, tuple[Step, str]] = {
    "400": (ErrorReply(400, "Invalid value for 'temperature'"), MODEL_REJECTED),
    "401": (ErrorReply(401, ECHO, code="invalid_api_key"), MODEL_REJECTED),
    "403": (ErrorReply(403, "Country not supported", code="unsupported_country"), MODEL_REJECTED),
    "404": (
        ErrorReply(404, "The model `loopback` does not exist", code="model_not_found"),
        MODEL_REJECTED,
    ),
    "413": (ErrorReply(413, "Request too large"), MODEL_REJECTED),
    "422": (ErrorReply(422, "Unprocessable entity"), MODEL_REJECTED),
    "429 quota": (
        ErrorReply(
            429, "You exceeded your current quota", "insufficient_quota", code="insufficient_quota"
        ),
        MODEL_REJECTED,
    ),
    "400 with a foreign body": (
        RawReply(400, '{"detail": "bad request"}', content_type="application/json"),
        MODEL_REJECTED,
    ),
    "429 with a huge Retry-After": (  # capped at an hour, over max_retry_after: not waited
        ErrorReply(429, "Rate limit reached", headers={"Retry-After": "99999999999999"}),
        MODEL_UNAVAILABLE,
    ),
    "400 context overflow": (
        ErrorReply(
            400,
            "This model's maximum context length is 8192 tokens",
            code="context_length_exceeded",
        ),
        MODEL_CONTEXT_OVERFLOW,
    ),
}


async def test_a_refusal_fails_the_interaction_definitely_with_its_code(
    temporal_env: WorkflowEnvironment,
) -> None:
    rows = {prompt: [step] for prompt, (step, _) in REFUSED.items()}
    with per_prompt(rows) as server:
        definition = Definition("rows-refused-for-good", model_retry=QUICK)
        async with serving(
            temporal_env, [definition], models={"default": chat_model(server.base_url)}
        ) as scope:
            ECHOED_KEY_QUEUES.add(scope.task_queue)
            handles = await start_all(scope, "rows-refused-for-good", list(REFUSED))
            failures: dict[str, InteractionFailed] = {}
            for prompt, handle in handles.items():
                outcome = await definite_outcome(handle)
                assert isinstance(outcome, InteractionFailed), (prompt, outcome)
                failures[prompt] = outcome
            snaps = {p: await h.snapshot() for p, h in handles.items()}
    for prompt, (_, code) in REFUSED.items():
        assert failures[prompt].code == code, prompt
        assert asked(server, prompt) == 1, prompt  # never sent again
        assert snaps[prompt].status == "failed" and snaps[prompt].unknown_effects == []
    assert "context_reducer" in failures["400 context overflow"].message
    assert "max_retry_after" in failures["429 with a huge Retry-After"].message
    assert MASKED in failures["401"].message and SECRET not in failures["401"].message


# --- unknown, never sent again ---------------------------------------------------------------


UNKNOWN: dict[str, Step] = {
    "500": ErrorReply(500, f"The server had an error. {ECHO}", "server_error"),
    "502": RawReply(502, "<html>502 Bad Gateway</html>", content_type="text/html"),
    "504": ErrorReply(504, "Gateway timeout", "server_error"),
    "bare 429": RawReply(429, "", content_type="text/plain"),
    "bare 503": RawReply(503, "Service Unavailable", content_type="text/plain"),
    "hang": Hang(),
    "garbled": RawReply(200, "{not a chat completion"),
    "429 with a foreign body": RawReply(429, '{"message": "slow down"}'),
}
STREAMED: dict[str, Step] = {
    "cut stream": CutStream(reply.text("a long answer that never ends " * 5), after=3),
    "error event": RawStream([{"error": {"message": "upstream model crashed"}}], done=False),
}


async def test_what_is_not_proven_stays_unknown_and_the_host_may_send_it_again(
    temporal_env: WorkflowEnvironment,
) -> None:
    rows: dict[str, list[Step]] = {p: [s] for p, s in {**UNKNOWN, **STREAMED}.items()}
    rows["500"].append(reply.text("sent again by retry_model_call"))
    rows["hang"].append(reply.text("sent again by resolve --retry"))
    with per_prompt(rows) as server:
        definitions = [
            Definition("rows-unknown", model_retry=QUICK),
            Definition("rows-unknown-streamed", model="streamed", model_retry=QUICK),
        ]
        models = {
            "default": chat_model(server.base_url, timeout=timedelta(seconds=2)),
            "streamed": chat_model(server.base_url, stream=True, timeout=timedelta(seconds=2)),
        }
        async with serving(temporal_env, definitions, models=models) as scope:
            ECHOED_KEY_QUEUES.add(scope.task_queue)
            handles = await start_all(scope, "rows-unknown", list(UNKNOWN))
            handles |= await start_all(scope, "rows-unknown-streamed", list(STREAMED))
            snaps: dict[str, TreeSnapshot] = {}
            for prompt, handle in handles.items():
                snaps[prompt] = await eventually(
                    handle.snapshot, lambda s: s.status != "running", timeout=30
                )
            for prompt, snap in snaps.items():
                assert snap.status == "waiting", (prompt, snap.failure)
                [unknown] = snap.unknown_effects
                assert unknown.kind == "model" and unknown.diagnostic, prompt
                assert SECRET not in unknown.diagnostic
                assert asked(server, prompt) == 1, prompt  # never sent again by itself
                assert snap.model_attempts == []
            await handles["500"].retry_model_call(snaps["500"].unknown_effects[0])
            assert (await handles["500"].result()).text == "sent again by retry_model_call"
            hung = snaps["hang"].unknown_effects[0]
            code = await asyncio.to_thread(
                main,
                [
                    "resolve",
                    handles["hang"].id,
                    hung.effect_id,
                    "--retry",
                    "--address",
                    address_of(temporal_env),
                ],
            )
            assert code == 0
            assert (await handles["hang"].result()).text == "sent again by resolve --retry"
            for prompt in ("500", "hang"):
                [superseded] = (await handles[prompt].snapshot()).model_attempts
                assert (superseded.outcome, superseded.resent_by) == ("superseded", "host")
                assert asked(server, prompt) == 2
            for prompt, handle in handles.items():
                if prompt not in ("500", "hang"):
                    await handle.cancel()


# --- a worker lost mid-model-call --------------------------------------------------------------


async def test_a_worker_killed_mid_model_call_then_the_host_sends_it_again(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    task_queue = f"loss-{uuid.uuid4().hex[:8]}"  # replayed with loss_worker's Definitions
    effects = tmp_path / "effects.txt"
    received = threading.Event()

    def answer(request: ReceivedRequest) -> Step:
        if not received.is_set():
            received.set()
            return Hang()  # the first call never answers: its worker is killed meanwhile
        return reply.text("answered on the second call")

    scope = ScopeClient(temporal_env.client, task_queue=task_queue)
    with ChatCompletionsServer(answer) as server:
        address = address_of(temporal_env)
        args = [TOOL_CALL_MODE[0] or "on_demand", server.base_url]
        with worker_process(address, task_queue, effects, args=args) as first:
            handle = await scope.start("loss-remote", "hello over http")
            STARTED_IDS.append(handle.id)
            await eventually(lambda: asyncio.sleep(0, received.is_set()), bool)
            os.kill(first.pid, signal.SIGKILL)
            first.wait(10)
        with worker_process(address, task_queue, effects, args=args):
            snap = await eventually(handle.snapshot, lambda s: bool(s.unknown_effects), timeout=30)
            [unknown] = snap.unknown_effects
            assert unknown.kind == "model" and "HEARTBEAT" in unknown.diagnostic
            assert len(server.received) == 1  # the new worker did not call the model again
            await handle.retry_model_call(unknown)
            out = await handle.result()
            snap = await handle.snapshot()
    assert out.text == "answered on the second call" and out.model_calls == 1
    assert len(server.received) == 2
    [superseded] = snap.model_attempts
    assert (superseded.effect_id, superseded.outcome, superseded.resent_by) == (
        f"{handle.id}/model/1",
        "superseded",
        "host",
    )
    assert superseded.followed_by == f"{handle.id}/model/1/retry/1"

"""`execute_tool`: every outcome kind, and conformance rules 17, 18, 25 and 31 (unit side)."""

from __future__ import annotations

import asyncio
import json
import threading
from datetime import date, timedelta
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

from scope_temporal.chat import ToolCall
from scope_temporal.errors import (
    TOOL_EXECUTION_FAILED,
    TOOL_INPUT_INVALID,
    TOOL_SCHEMA_INVALID,
    TOOL_TIMEOUT,
)
from scope_temporal.tools import (
    Failed,
    HostFailure,
    InputRequired,
    Rejected,
    Succeeded,
    ToolFailure,
    ToolInvocation,
    ToolOutcome,
    ToolOutput,
    Unknown,
    advertise_tools,
    current_tool_call,
    execute_tool,
    require_tool_input,
    tool,
    tool_input_continuation,
)
from scope_temporal.tools.rejections import silent_acknowledgement

BIG = 2**70


def invocation(name: str, arguments: Any = None, **extra: Any) -> ToolInvocation:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return ToolInvocation(
        process_id="root/tool/1/0",
        ref="root/1/0",
        model_call_seq=1,
        call_index=0,
        call=ToolCall(id="call-1", name=name, arguments=text),
        effect_id="effect-1",
        **extra,
    )


class Runs:
    """Counts body entries."""

    def __init__(self) -> None:
        self.count = 0


class Query(BaseModel):
    text: str
    limit: int = 2


class Hits(BaseModel):
    hits: list[str]
    total: int


# --- succeeded -------------------------------------------------------------------------


async def test_async_tool_returning_str_succeeds() -> None:
    @tool
    async def greet(name: str, punctuation: str = "!") -> str:
        return f"hello {name}{punctuation}"

    outcome = await execute_tool(greet, invocation("greet", {"name": "ada"}))
    assert isinstance(outcome, Succeeded)
    assert outcome.result.content == "hello ada!"
    assert (outcome.result.call_id, outcome.result.name) == ("call-1", "greet")
    assert outcome.result.is_error is False
    assert outcome.advertised == ()


async def test_sync_tool_runs_in_a_worker_thread() -> None:
    seen: list[tuple[bool, str]] = []

    @tool
    def where() -> str:
        seen.append(
            (threading.current_thread() is threading.main_thread(), current_tool_call().ref)
        )
        return "ok"

    outcome = await execute_tool(where, invocation("where"))
    assert isinstance(outcome, Succeeded)
    assert outcome.result.content == "ok"
    assert seen == [(False, "root/1/0")]  # off the event loop, context still visible


async def test_json_value_becomes_json_text_with_exact_integers() -> None:
    @tool
    def numbers() -> dict[str, Any]:
        return {"n": BIG, "items": [1, 2], "name": "é"}

    outcome = await execute_tool(numbers, invocation("numbers"))
    assert isinstance(outcome, Succeeded)
    assert json.loads(outcome.result.content) == {"n": BIG, "items": [1, 2], "name": "é"}


async def test_pydantic_parameter_and_return_value() -> None:
    received: list[Query] = []

    @tool
    async def search(query: Query) -> Hits:
        received.append(query)
        return Hits(hits=[query.text] * query.limit, total=BIG)

    outcome = await execute_tool(search, invocation("search", {"query": {"text": "x"}}))
    assert received == [Query(text="x", limit=2)]
    assert isinstance(outcome, Succeeded)
    assert Hits.model_validate_json(outcome.result.content) == Hits(hits=["x", "x"], total=BIG)


async def test_omitted_arguments_use_the_function_defaults() -> None:
    sentinel: list[object] = []
    marker = object()

    @tool(schema={"type": "object", "properties": {"a": {"type": "integer"}}})
    def fn(a: int = 1, b: Any = marker) -> str:
        sentinel.append(b)
        return str(a)

    outcome = await execute_tool(fn, invocation("fn"))
    assert isinstance(outcome, Succeeded)
    assert outcome.result.content == "1"
    assert sentinel == [marker]


async def test_c25_tool_output_extras_stay_out_of_model_context() -> None:
    @tool
    def report(silent: bool) -> ToolOutput:
        return ToolOutput(
            "3 rows found",
            for_user={"table": [[1, 2], [3, BIG]]},
            ref="artifact-7",
            metadata={"rows": 3, "source": "warehouse"},
            silent=silent,
        )

    outcome = await execute_tool(report, invocation("report", {"silent": False}))
    assert isinstance(outcome, Succeeded)
    assert outcome.result.content == "3 rows found"
    assert outcome.for_user == {"table": [[1, 2], [3, BIG]]}
    assert outcome.ref == "artifact-7"
    assert outcome.metadata == {"rows": 3, "source": "warehouse"}
    for extra in ("table", "artifact-7", "warehouse", str(BIG)):
        assert extra not in outcome.result.content

    quiet = await execute_tool(report, invocation("report", {"silent": True}))
    assert isinstance(quiet, Succeeded)
    assert quiet.result == silent_acknowledgement(invocation("report").call)
    assert quiet.result.content == "Done. The output was delivered to the user."
    assert "3 rows" not in quiet.result.content
    assert quiet.for_user == {"table": [[1, 2], [3, BIG]]}
    assert quiet.ref == "artifact-7"


# --- failed ----------------------------------------------------------------------------


async def test_c18_tool_failure_is_a_definite_model_visible_error() -> None:
    runs = Runs()

    @tool
    async def charge(amount: int) -> str:
        runs.count += 1
        raise ToolFailure(f"card declined for {amount}")

    outcome = await execute_tool(charge, invocation("charge", {"amount": 5}))
    assert isinstance(outcome, Failed)
    assert not isinstance(outcome, Unknown)
    assert outcome.kind == "failed"
    assert outcome.code == TOOL_EXECUTION_FAILED
    assert outcome.result.is_error is True
    assert outcome.result.content == "card declined for 5"
    assert outcome.result.call_id == "call-1"
    assert runs.count == 1


# --- rejected --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments",
    ['{"count": "three"}', "{}", '{"count": 1, "extra": true}', "not json", "[1]"],
)
async def test_c17_invalid_arguments_never_run_the_tool(arguments: str) -> None:
    runs = Runs()

    @tool
    async def repeat(count: int) -> str:
        runs.count += 1
        return "x" * count

    outcome = await execute_tool(repeat, invocation("repeat", arguments))
    assert runs.count == 0
    assert isinstance(outcome, Rejected)
    assert outcome.kind == "rejected"
    assert outcome.code == TOOL_INPUT_INVALID
    assert outcome.result.is_error
    assert "invalid arguments" in outcome.result.content


async def test_arguments_that_do_not_convert_to_the_parameter_types_are_rejected() -> None:
    runs = Runs()

    @tool(schema={"type": "object", "properties": {"when": {"type": "string"}}})
    def schedule(when: int) -> str:
        runs.count += 1
        return str(when)

    outcome = await execute_tool(schedule, invocation("schedule", {"when": "tomorrow"}))
    assert isinstance(outcome, Rejected)
    assert outcome.code == TOOL_INPUT_INVALID
    assert "when" in outcome.result.content
    assert runs.count == 0


# --- input required --------------------------------------------------------------------


async def test_input_required_then_continuation_on_reentry_keeps_big_integers() -> None:
    entries: list[tuple[Any, Any] | None] = []
    schema = {
        "type": "object",
        "properties": {"approved": {"type": "boolean"}, "limit": {"type": "integer"}},
        "required": ["approved"],
    }

    @tool
    async def transfer(amount: int) -> str:
        continuation = tool_input_continuation()
        entries.append(continuation)
        if continuation is None:
            require_tool_input(f"Approve {amount}?", schema, state={"amount": amount, "step": 1})
        state, response = continuation
        return f"sent {state['amount']} under {response['limit']}"

    first = await execute_tool(transfer, invocation("transfer", {"amount": BIG}))
    assert isinstance(first, InputRequired)
    assert first.prompt == f"Approve {BIG}?"
    assert first.response_schema == schema
    assert first.state == {"amount": BIG, "step": 1}

    # The outcome crosses a JSON boundary (the activity result) and comes back exact.
    adapter: TypeAdapter[ToolOutcome] = TypeAdapter(ToolOutcome)
    carried = adapter.validate_json(adapter.dump_json(first))
    assert isinstance(carried, InputRequired)
    assert carried.state["amount"] == BIG

    again = invocation(
        "transfer",
        {"amount": BIG},
        attempt=2,
        continuation_state=carried.state,
        continuation_response={"approved": True, "limit": BIG + 1},
        has_continuation=True,
    )
    second = await execute_tool(transfer, again)
    assert isinstance(second, Succeeded)
    assert second.result.content == f"sent {BIG} under {BIG + 1}"
    assert entries == [None, ({"amount": BIG, "step": 1}, {"approved": True, "limit": BIG + 1})]


async def test_continuation_with_none_state_and_response_is_still_a_continuation() -> None:
    @tool
    def check() -> str:
        return repr(tool_input_continuation())

    outcome = await execute_tool(check, invocation("check", has_continuation=True))
    assert isinstance(outcome, Succeeded)
    assert outcome.result.content == "(None, None)"


async def test_invalid_input_schema_or_state_makes_the_outcome_unknown() -> None:
    @tool
    def bad_schema() -> str:
        require_tool_input("?", {"type": "nonsense"})

    @tool
    def bad_state() -> str:
        require_tool_input("?", {"type": "boolean"}, state=object())

    schema_outcome = await execute_tool(bad_schema, invocation("bad_schema"))
    assert isinstance(schema_outcome, Unknown)
    assert schema_outcome.code == TOOL_SCHEMA_INVALID
    state_outcome = await execute_tool(bad_state, invocation("bad_state"))
    assert isinstance(state_outcome, Unknown)
    assert state_outcome.code == TOOL_EXECUTION_FAILED


@pytest.mark.parametrize(
    ("prompt", "schema", "state", "problem"),
    [
        (object(), {"type": "boolean"}, None, "prompt must be JSON-serialisable"),
        ("?", {"type": "boolean"}, object(), "state must be JSON-serialisable"),
        ("?", ["type", "boolean"], None, "response_schema must be a dict"),
        ("?", {"type": "nonsense"}, None, "response_schema is not valid"),
    ],
)
async def test_require_tool_input_checks_its_arguments_with_a_type_error(
    prompt: Any, schema: Any, state: Any, problem: str
) -> None:
    @tool
    def ask() -> str:
        try:
            require_tool_input(prompt, schema, state)
        except TypeError as error:
            return f"refused: {error}"
        return "not reached"

    outcome = await execute_tool(ask, invocation("ask"))
    assert isinstance(outcome, Succeeded)
    assert outcome.result.content.startswith("refused: ") and problem in outcome.result.content


async def test_a_json_prompt_is_kept_in_json_form() -> None:
    @tool
    def ask() -> str:
        require_tool_input({"question": "Ship?", "at": date(2024, 5, 1), "n": BIG}, {})

    outcome = await execute_tool(ask, invocation("ask"))
    assert isinstance(outcome, InputRequired)
    assert outcome.prompt == {"question": "Ship?", "at": "2024-05-01", "n": BIG}


# --- unknown ---------------------------------------------------------------------------


async def test_plain_exception_is_unknown_with_a_diagnostic() -> None:
    @tool
    async def flaky() -> str:
        raise ConnectionError("socket closed")

    outcome = await execute_tool(flaky, invocation("flaky"))
    assert isinstance(outcome, Unknown)
    assert outcome.code == TOOL_EXECUTION_FAILED
    assert outcome.diagnostic == "ConnectionError: socket closed"


async def test_host_failure_is_unknown() -> None:
    @tool
    def pay() -> str:
        raise HostFailure("gateway timed out after charging")

    outcome = await execute_tool(pay, invocation("pay"))
    assert isinstance(outcome, Unknown)
    assert outcome.code == TOOL_EXECUTION_FAILED
    assert outcome.diagnostic == "HostFailure: gateway timed out after charging"


async def test_timeout_is_unknown_with_the_timeout_code() -> None:
    @tool(timeout=timedelta(milliseconds=50))
    async def slow() -> str:
        await asyncio.sleep(10)
        return "late"

    outcome = await execute_tool(slow, invocation("slow"))
    assert isinstance(outcome, Unknown)
    assert outcome.code == TOOL_TIMEOUT
    assert outcome.diagnostic.startswith("TimeoutError: tool 'slow' did not finish within 0.05 s")


async def test_sync_body_exceeding_its_timeout_is_unknown() -> None:
    release = threading.Event()

    @tool(timeout=0.05)
    def blocking() -> str:
        release.wait(5)
        return "late"

    try:
        outcome = await execute_tool(blocking, invocation("blocking"))
    finally:
        release.set()
    assert isinstance(outcome, Unknown)
    assert outcome.code == TOOL_TIMEOUT


async def test_the_bodys_own_timeout_error_is_not_a_tool_timeout() -> None:
    @tool(timeout=10)
    async def upstream() -> str:
        raise TimeoutError("upstream API")

    outcome = await execute_tool(upstream, invocation("upstream"))
    assert isinstance(outcome, Unknown)
    assert outcome.code == TOOL_EXECUTION_FAILED
    assert outcome.diagnostic == "TimeoutError: upstream API"


async def test_unserialisable_return_value_is_unknown() -> None:
    @tool
    def odd() -> object:
        return object()

    outcome = await execute_tool(odd, invocation("odd"))
    assert isinstance(outcome, Unknown)
    assert outcome.code == TOOL_EXECUTION_FAILED


async def test_explicit_schema_invalid_at_call_time_is_unknown_and_the_body_never_runs() -> None:
    runs = Runs()

    @tool(schema={"type": "object", "properties": {"a": {"type": "bogus"}}})
    def broken(a: int = 0) -> str:
        runs.count += 1
        return ""

    outcome = await execute_tool(broken, invocation("broken"))
    assert isinstance(outcome, Unknown)
    assert outcome.code == TOOL_SCHEMA_INVALID
    assert runs.count == 0


async def test_cancellation_propagates() -> None:
    started = asyncio.Event()

    @tool
    async def wait_forever() -> str:
        started.set()
        await asyncio.sleep(60)
        return "never"

    task = asyncio.create_task(execute_tool(wait_forever, invocation("wait_forever")))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


# --- context and advertisement ----------------------------------------------------------


async def test_current_tool_call_is_the_invocation() -> None:
    seen: list[ToolInvocation] = []

    @tool
    async def introspect() -> str:
        seen.append(current_tool_call())
        return current_tool_call().effect_id

    call = invocation("introspect")
    outcome = await execute_tool(introspect, call)
    assert seen == [call]
    assert isinstance(outcome, Succeeded)
    assert outcome.result.content == "effect-1"


async def test_advertised_tools_are_reported_only_on_success() -> None:
    @tool
    def unlock(fail: bool) -> str:
        advertise_tools("admin", "audit")
        advertise_tools("admin")
        if fail:
            raise ToolFailure("could not unlock")
        return "unlocked"

    allowed = ("admin", "audit", "export")
    ok = await execute_tool(unlock, invocation("unlock", {"fail": False}, deferred_tools=allowed))
    assert isinstance(ok, Succeeded)
    assert ok.advertised == ("admin", "audit")
    failed = await execute_tool(
        unlock, invocation("unlock", {"fail": True}, deferred_tools=allowed)
    )
    assert isinstance(failed, Failed)
    assert "advertised" not in failed.model_dump()


async def test_advertising_a_non_deferred_tool_fails_the_call() -> None:
    @tool
    def unlock() -> str:
        advertise_tools("admin", "root")
        return "unlocked"

    outcome = await execute_tool(unlock, invocation("unlock", deferred_tools=("admin",)))
    assert isinstance(outcome, Failed)
    assert "'root'" in outcome.result.content
    assert "'admin'" not in outcome.result.content


async def test_advertisements_staged_before_an_input_wait_are_dropped() -> None:
    @tool
    def ask() -> str:
        if tool_input_continuation() is None:
            advertise_tools("admin")
            require_tool_input("?", {"type": "boolean"})
        return "done"

    first = await execute_tool(ask, invocation("ask", deferred_tools=("admin",)))
    assert isinstance(first, InputRequired)
    again = invocation("ask", deferred_tools=("admin",), has_continuation=True)
    second = await execute_tool(ask, again)
    assert isinstance(second, Succeeded)
    assert second.advertised == ()

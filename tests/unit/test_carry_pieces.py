"""CONFORMANCE 45: a carried state holds each settled round once, a continue-as-new stores
only what is new, and every earlier form still loads.

The wire form is `InteractionState.wire_share` (rule 4 of `scope_temporal.wire`); the store
is `DirectoryStorage`'s pieces; the first model call of a run refers to what the previous
run sent (`InteractionInput.carry.context_digest`). The same, live with Temporal:
`tests/live/test_live_payloads.py`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path
from typing import Any, NoReturn

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.converter import StorageDriverClaim

from scope_temporal import Definition
from scope_temporal.chat import Message, ToolCall, ToolResult
from scope_temporal.context_refs import ContextChain, ContextRef, prefix_digest
from scope_temporal.converter import ScopePayloadConverter
from scope_temporal.driver.model_calls import ModelCaller
from scope_temporal.interaction import carried_context
from scope_temporal.interaction.snapshot import ResultEntry, RoundResults
from scope_temporal.interaction.state import InteractionState
from scope_temporal.models import ScriptedModel, reply
from scope_temporal.payloads import InteractionInput, ModelActivityInput
from scope_temporal.storage import DirectoryStorage, pieces
from scope_temporal.testing import LocalRunner
from scope_temporal.testing.engine import LocalTransport
from scope_temporal.tools import tool

PID = "long-state-5a58dab58130"
CONVERTER = ScopePayloadConverter()


def result_text(n: int) -> str:
    return f"{n}:" + hashlib.sha256(str(n).encode()).hexdigest() * 16  # about 1 KB, distinct


def state_of(rounds: int) -> InteractionState:
    """A state after `rounds` rounds of one tool call returning about 1 KB each."""
    context = [Message.user("go")]
    settled = []
    for n in range(1, rounds + 1):
        call = ToolCall(id=f"call_{n}", name="kb", arguments=json.dumps({"n": n}))
        result = ToolResult(call_id=call.id, name="kb", content=result_text(n))
        context += [Message.assistant(tool_calls=[call]), Message.tool([result])]
        entry = ResultEntry(
            call_index=0, call=call, result=result, disposition="succeeded", call_ref=f"{PID}/{n}/0"
        )
        settled.append(RoundResults(process_id=PID, model_call_seq=n, entries=(entry,)))
    return InteractionState(
        process_id=PID,
        definition="long",
        digest="d" * 64,
        context=context,
        max_model_calls=None,
        granted=("read",),
        rounds=settled,
        model_calls=rounds,
        next_model_call_seq=rounds + 1,
    )


def payload_of(state: InteractionState) -> Payload:
    [payload] = CONVERTER.to_payloads([InteractionInput(definition="long", state=state)])
    return payload


def loaded(payload: Payload) -> InteractionState:
    [value] = CONVERTER.from_payloads([payload], [InteractionInput])
    assert isinstance(value, InteractionInput) and value.state is not None
    return value.state


# --- each settled round once ----------------------------------------------------------


def test_c45_a_carried_state_holds_each_settled_result_once() -> None:
    state = state_of(40)
    payload = payload_of(state)
    for n in (1, 17, 40):
        assert payload.data.count(result_text(n).encode()) == 1
    assert loaded(payload) == state
    assert len(payload.data) < 0.6 * len(state.model_dump_json())  # the long form: twice


def test_c45_a_loaded_state_shares_the_context_objects() -> None:
    state = loaded(payload_of(state_of(3)))
    entry = state.rounds[1].entries[0]
    assert entry.result is state.context[4].tool_results[0]
    assert entry.call is state.context[3].tool_calls[0]


def test_c45_a_process_that_never_saw_the_segments_decodes_the_same_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = state_of(600)  # three segments of messages and of rounds
    payload = payload_of(state)
    remembered = loaded(payload)
    assert remembered.context[5] is state.context[5]  # the texts this process wrote
    monkeypatch.setattr(carried_context, "_SEGMENTS", carried_context._Segments())
    monkeypatch.setattr(carried_context, "_ROUNDS", carried_context._Rounds())
    fresh = loaded(payload)  # another worker, or a replay after a restart
    assert fresh == remembered == state and fresh.context[5] is not state.context[5]
    assert fresh.rounds[299].entries[0].result is fresh.context[600].tool_results[0]


def test_c45_a_round_not_in_the_context_is_written_whole() -> None:
    state = state_of(3)
    state.context = [Message.user("summary")]  # as a context reducer replaces it
    payload = payload_of(state)
    assert payload.data.count(result_text(2).encode()) == 1  # in the rounds only
    assert loaded(payload) == state


def test_c45_a_carried_state_in_the_earlier_forms_still_loads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = state_of(5)
    long_form = InteractionInput(definition="long", state=state).model_dump_json()
    assert InteractionInput.model_validate_json(long_form).state == state
    monkeypatch.setattr(InteractionState, "wire_share", lambda self, dumped: None)
    monkeypatch.setattr(InteractionState, "WIRE_OWN", frozenset())
    earlier = payload_of(state)  # the compact form of the release before
    assert b"shared_" not in earlier.data and earlier.data.count(b"call_ref") == 5
    monkeypatch.undo()
    assert loaded(earlier) == state


def test_c45_a_place_that_names_nothing_is_refused() -> None:
    payload = payload_of(state_of(2))
    broken = Payload(metadata=payload.metadata, data=payload.data.replace(b"[4,0]", b"[9,0]"))
    with pytest.raises(Exception, match="holds none"):
        loaded(broken)


# --- the store grows with what is new -----------------------------------------------


def test_c45_the_store_grows_by_what_each_continue_as_new_adds(tmp_path: Path) -> None:
    store = DirectoryStorage(tmp_path)
    stored = 0
    # five continue-as-news 270 rounds apart, as the long_state bench's runs end
    for rounds in range(270, 1351, 270):
        claim = store._write(payload_of(state_of(rounds)))
        size = sum(p.stat().st_size for p in tmp_path.iterdir())
        new = len(payload_of(state_of(270)).data)  # what 270 rounds add to a state
        assert size - stored < 1.25 * new, (rounds, size - stored, new)
        stored = size
        assert loaded(store._read(claim)) == state_of(rounds)
    results = sum(len(result_text(n)) for n in range(1, 1351))
    assert stored < 1.5 * results  # whole states: 3 times the results here, and growing


def test_c45_a_payload_stored_whole_by_an_earlier_release_still_reads(tmp_path: Path) -> None:
    payload = payload_of(state_of(100))
    data = payload.SerializeToString()
    digest = hashlib.sha256(data).hexdigest()
    (tmp_path / digest).write_bytes(data)  # how DirectoryStorage stored every payload
    read = DirectoryStorage(tmp_path)._read(StorageDriverClaim(claim_data={"sha256": digest}))
    assert read == payload


def test_c45_pieces_join_back_and_an_insertion_moves_only_the_cuts_around_it() -> None:
    before = payload_of(state_of(200)).data
    after = payload_of(state_of(210)).data
    old, new = list(pieces(before)), list(pieces(after))
    assert b"".join(old) == before and b"".join(new) == after
    assert len(set(new) - set(old)) <= 8  # the envelope, the grown ends, the tail
    assert list(pieces(b"not json at all")) == [b"not json at all"]


# --- the first model call of a run ----------------------------------------------------


def test_c45_a_resumed_chain_gives_the_digests_of_a_hashed_one() -> None:
    messages = state_of(4).context
    seed = ContextRef(count=2, digest="seed")
    hashed = ContextChain(seed)
    hashed.extend(messages)
    resumed = ContextChain.resumed(seed, messages, prefix_digest(messages, "seed"))
    for count in range(len(messages) + 1):
        assert resumed.ref(count) == hashed.ref(count)
    resumed.extend([Message.user("more")])
    hashed.extend([Message.user("more")])
    assert resumed.ref(len(messages) + 1) == hashed.ref(len(messages) + 1)


def test_c45_no_digest_is_carried_for_a_context_replaced_since_the_last_call() -> None:
    context = tuple(state_of(2).context)
    caller = ModelCaller(len(context), resumed=(context, prefix_digest(context)))
    assert caller.carried_digest(context) == prefix_digest(context)
    replaced = (Message.user("summary"), *context[1:])
    assert caller.carried_digest(replaced) is None
    assert ModelCaller().carried_digest(context) is None


@tool(permission="read")
def kb(n: int) -> str:
    """Return about 1 KB."""
    return result_text(n)


async def test_c45_the_first_model_call_after_continue_as_new_sends_only_what_is_new(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked = itertools.count()  # every other round boundary
    monkeypatch.setattr(
        LocalTransport, "continue_as_new_suggested", lambda self: next(asked) % 2 == 1
    )

    carried: list[int] = []

    async def through_the_converter(self: LocalTransport, input: InteractionInput) -> NoReturn:
        carried.append(input.carry.context_sent)
        [payload] = CONVERTER.to_payloads([input])  # as Temporal carries it
        [read] = CONVERTER.from_payloads([payload], [InteractionInput])
        await original(self, read)
        raise AssertionError("continue_as_new returned")

    original = LocalTransport.continue_as_new
    monkeypatch.setattr(LocalTransport, "continue_as_new", through_the_converter)
    sent: list[int] = []
    run_model = LocalTransport.run_model

    async def recording(self: LocalTransport, input: ModelActivityInput, *a: Any, **k: Any) -> Any:
        sent.append(len(input.new_messages))
        return await run_model(self, input, *a, **k)

    monkeypatch.setattr(LocalTransport, "run_model", recording)
    script = [reply.tool_calls(("kb", {"n": n})) for n in range(8)] + [reply.text("ok")]
    model = ScriptedModel(script)
    runner = LocalRunner(
        definitions=[Definition("long", tools=[kb])], tools=[kb], models={"default": model}
    )
    run = await runner.start("long", [Message.user("go")])
    out = await run.result(timeout=10)
    assert out.text == "ok" and out.model_calls == 9
    snap = run.snapshot()
    assert [r.entries[0].result.content for r in snap.settled_results] == [
        result_text(n) for n in range(8)
    ]
    assert len(carried) >= 3  # it did continue as new, more than once
    assert sent == [1] + [2] * 8  # the first "go", then each call's response and result
    assert len(model.requests[-1].messages) == 17  # the worker still saw everything

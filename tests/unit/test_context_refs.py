"""The model activity's input refers to the conversation prefix instead of carrying it:
chain digests, the worker-side rebuild, and what happens on a cache miss."""

from __future__ import annotations

import pytest

from scope_temporal import Definition, Message, tool
from scope_temporal.activities.model_input import (
    ContextUnavailable,
    ModelRequestBuilder,
    RequestMismatch,
)
from scope_temporal.chat import Options
from scope_temporal.context_refs import EMPTY_REF, ContextChain, ContextRef, prefix_digest
from scope_temporal.interaction import rules
from scope_temporal.payloads import ModelActivityInput


@tool(permission="read")
def look(query: str) -> str:
    """Look something up."""
    return query


DEFINITION = Definition("refs", tools=[look])


def messages(*texts: str) -> list[Message]:
    return [Message.user(t) for t in texts]


def activity_input(prefix: ContextRef, new: list[Message], **changes: object) -> ModelActivityInput:
    values: dict[str, object] = {
        "definition": DEFINITION.name,
        "digest": DEFINITION.digest,
        "process_id": "p1",
        "effect_id": "p1/model/1",
        "model_call_seq": 1,
        "model": "default",
        "options": Options(),
        "prefix": prefix,
        "new_messages": tuple(new),
    }
    values.update(changes)
    return ModelActivityInput.model_validate(values)


def test_chain_digests_pin_content_and_order() -> None:
    a, b = messages("a", "b")
    assert prefix_digest([a, b]) != prefix_digest([b, a])
    assert prefix_digest([a, b]) == prefix_digest(messages("a", "b"))
    chain = ContextChain()
    chain.extend([a, b])
    assert chain.ref(2) == ContextRef(count=2, digest=prefix_digest([a, b]))
    assert chain.ref(0) == EMPTY_REF
    assert chain.holds(chain.ref(1)) and not chain.holds(ContextRef(count=1, digest="x"))
    assert not chain.holds(ContextRef(count=3, digest=chain.ref(2).digest))


def test_sync_keeps_the_shared_prefix_and_hashes_only_what_changed() -> None:
    a, b, c = messages("a", "b", "c")
    chain = ContextChain()
    assert chain.sync([a, b]) == 0
    assert chain.sync([a, b, c]) == 2  # appended: both kept
    replaced = Message.user("a")  # equal content, another object (e.g. a reducer's output)
    assert chain.sync([replaced]) == 0
    assert chain.messages == (replaced,)
    assert chain.ref(1).digest == prefix_digest([a])


async def test_a_cache_hit_rebuilds_the_request_without_fetching() -> None:
    builder = ModelRequestBuilder()
    fetched: list[int] = []

    async def fetch(workflow_id: str, start: int, end: int) -> list[Message]:
        fetched.append(end)
        raise AssertionError("no fetch expected")

    first = messages("hello", "world")
    request = await builder.rebuild(activity_input(EMPTY_REF, first), DEFINITION, fetch)
    assert request.messages == tuple(first)
    assert request.tools == rules.manifest(DEFINITION, [])
    more = messages("again")
    ref = ContextRef(count=2, digest=prefix_digest(first))
    request = await builder.rebuild(activity_input(ref, more), DEFINITION, fetch)
    assert request.messages == (*first, *more)
    assert fetched == []


async def test_the_reply_a_worker_remembered_is_referred_to_without_fetching() -> None:
    """The next call's prefix ends with the previous reply (as the workflow decoded it from
    the call's result): the worker that answered holds it, so only what follows travels."""
    builder = ModelRequestBuilder()

    async def fetch(workflow_id: str, start: int, end: int) -> list[Message]:
        raise AssertionError("no fetch expected")

    first = activity_input(EMPTY_REF, messages("hello"))
    await builder.rebuild(first, DEFINITION, fetch)
    reply = Message.assistant("hi there")
    builder.remember_reply(first, reply)
    as_recorded = Message.model_validate_json(reply.model_dump_json())
    context = [*first.new_messages, as_recorded]
    ref = ContextRef(count=2, digest=prefix_digest(context))
    then = activity_input(ref, messages("and now?"), model_call_seq=2, effect_id="p1/model/2")
    request = await builder.rebuild(then, DEFINITION, fetch)
    assert request.messages == (*context, *then.new_messages)


async def test_a_cache_miss_fetches_the_prefix_and_checks_its_digest() -> None:
    first = messages("one", "two", "three")
    ref = ContextRef(count=3, digest=prefix_digest(first))
    calls: list[int] = []

    async def fetch(workflow_id: str, start: int, end: int) -> list[Message]:
        calls.append(end)
        return list(first[start:end])

    request = await ModelRequestBuilder().rebuild(
        activity_input(ref, messages("four")), DEFINITION, fetch
    )
    assert [m.text for m in request.messages] == ["one", "two", "three", "four"]
    assert calls == [3]

    async def tampered(workflow_id: str, start: int, end: int) -> list[Message]:
        return messages("one", "TWO", "three")

    with pytest.raises(ContextUnavailable, match="the model was not called"):
        await ModelRequestBuilder().rebuild(activity_input(ref, []), DEFINITION, tampered)


async def test_a_worker_serving_another_definition_version_refuses_before_calling() -> None:
    async def fetch(workflow_id: str, start: int, end: int) -> list[Message]:
        return []

    changed = Definition("refs", tools=[look], instructions="changed")
    with pytest.raises(RequestMismatch, match="has another digest"):
        await ModelRequestBuilder().rebuild(activity_input(EMPTY_REF, []), changed, fetch)
    with pytest.raises(RequestMismatch, match="is not registered"):
        await ModelRequestBuilder().rebuild(activity_input(EMPTY_REF, []), None, fetch)


async def test_the_cache_keeps_only_the_most_recent_conversations() -> None:
    builder = ModelRequestBuilder(max_conversations=2)
    misses: list[str] = []

    async def fetch(workflow_id: str, start: int, end: int) -> list[Message]:
        misses.append(workflow_id)
        return messages("x")

    ref = ContextRef(count=1, digest=prefix_digest(messages("x")))
    for pid in ("p1", "p2", "p3"):
        await builder.rebuild(
            activity_input(EMPTY_REF, messages("x"), process_id=pid), DEFINITION, fetch
        )
    await builder.rebuild(activity_input(ref, [], process_id="p3"), DEFINITION, fetch)
    assert misses == []
    await builder.rebuild(activity_input(ref, [], process_id="p1"), DEFINITION, fetch)
    assert len(misses) == 1  # p1 was dropped when p3 came in

"""A carried state's conversation and settled rounds on the wire, in segments each
encoded and decoded once per process (pure: no Temporal, no I/O).

A long Interaction's state is encoded at the end of every run and decoded at the start of
the next, and nearly all of it is the conversation and the settled rounds, which only
grow: encoding and decoding them whole cost time in their bytes at every continue-as-new
(about 0.15 s and 0.3 s of CPU for 5,000 rounds), inside a workflow task. So the wire
form (`InteractionState.wire_share`) writes each as JSON texts of `SEGMENT` entries, and
this module keeps, per process, the text of each segment it wrote or read with its
values:

- encoding a segment whose messages (rounds) are the very objects encoded before reuses
  the text (a round's, while the context holds its call and result where it did);
- decoding a text met before returns the values it stood for (rounds: while the context
  holds, by identity, what they point at).

Both are pure functions of their input, memoized: a process that has not seen a segment
(another worker, a replay after a restart) computes an equal value from the text. The
values are frozen, so sharing them between runs changes nothing. A settled round's call
and result the context holds are written as their place in it, `[message, part]`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import TypeAdapter
from pydantic_core import to_json

from scope_temporal.chat import Message, ToolCall, ToolCallPart, ToolResult, ToolResultPart
from scope_temporal.ids import tool_call_ref
from scope_temporal.interaction.snapshot import RoundResults
from scope_temporal.wire import compact

SEGMENT = 256
"""Messages (rounds) per segment; the last one may hold fewer."""

_KEPT_CHARS = 128 * 1024 * 1024
"""How many characters of segment texts a process keeps (when full, it starts again)."""

_MESSAGES: TypeAdapter[list[Message]] = TypeAdapter(list[Message])


class _Segments:
    """Segment texts and their messages. No lock, though the SDK runs workflow tasks on
    a pool of threads: each step is one dict operation, and a hit is taken only after
    checking, by identity, the messages the text was kept with (a race costs a miss)."""

    def __init__(self) -> None:
        self._by_text: dict[str, tuple[Message, ...]] = {}
        self._by_first: dict[int, str] = {}  # id(first message) -> its segment's text
        self._chars = 0

    def text_of(self, messages: Sequence[Message]) -> str:
        text = self._by_first.get(id(messages[0]))
        known = self._by_text.get(text) if text is not None else None
        if (
            text is not None
            and known is not None
            and len(known) == len(messages)
            and all(a is b for a, b in zip(known, messages, strict=True))
        ):
            return text
        text = to_json([compact(m) for m in messages]).decode()
        self._keep(text, tuple(messages))
        return text

    def messages_of(self, text: str) -> tuple[Message, ...]:
        known = self._by_text.get(text)
        if known is not None:
            return known
        messages = tuple(_MESSAGES.validate_json(text))
        self._keep(text, messages)
        return messages

    def _keep(self, text: str, messages: tuple[Message, ...]) -> None:
        if not messages:
            return
        if self._chars + len(text) > _KEPT_CHARS:  # full: start again
            self._by_first.clear()
            self._by_text.clear()
            self._chars = 0
        self._by_text[text] = messages  # keeps the first message alive: its id stays its
        self._by_first[id(messages[0])] = text
        self._chars += len(text)


_SEGMENTS = _Segments()


def context_to_wire(context: Sequence[Message]) -> list[str]:
    """`context` as the JSON texts of its segments."""
    return [
        _SEGMENTS.text_of(context[start : start + SEGMENT])
        for start in range(0, len(context), SEGMENT)
    ]


Place = list[int]
"""Where the context holds a value: `[message index, part index]`."""


class _Rounds:
    """Segments of settled rounds as wire texts, kept with the rounds and the places
    they name, and reused while the rounds are the same objects and the context holds
    the same objects there (lock-free as `_Segments`)."""

    def __init__(self) -> None:
        self._by_text: dict[str, tuple[tuple[RoundResults, ...], tuple[Places, ...]]] = {}
        self._by_first: dict[int, str] = {}

    def text_of(
        self,
        process_id: str,
        context: Sequence[Message],
        rounds: Sequence[RoundResults],
        held: Callable[[Sequence[RoundResults]], dict[ToolCall | ToolResult, Place]],
    ) -> str:
        text = self._by_first.get(id(rounds[0]))
        kept = self._by_text.get(text) if text is not None else None
        if text is not None and kept is not None and _same(kept, rounds, context):
            return text
        places = held(rounds)
        found = tuple(
            tuple(places.get(v) for e in r.entries for v in (e.call, e.result)) for r in rounds
        )
        wired = [_round_wire(process_id, r, p) for r, p in zip(rounds, found, strict=True)]
        text = to_json(wired).decode()
        self._keep(text, tuple(rounds), found)
        return text

    def rounds_of(
        self, text: str, process_id: str, context: Sequence[Message]
    ) -> tuple[RoundResults, ...]:
        kept = self._by_text.get(text)
        if kept is not None and _still_all(context, kept[0], kept[1]):
            return kept[0]
        wired = json.loads(text)
        if not isinstance(wired, list):
            raise ValueError("a segment of settled rounds is not a list")
        rounds = tuple(_round_from_wire(r, process_id, context) for r in wired)
        found = tuple(_places_in(r) for r in wired)
        self._keep(text, rounds, found)
        return rounds

    def _keep(
        self, text: str, rounds: tuple[RoundResults, ...], places: tuple[Places, ...]
    ) -> None:
        if not rounds:
            return
        if len(self._by_text) > _KEPT_ROUND_SEGMENTS:
            self._by_first.clear()
            self._by_text.clear()
        self._by_text[text] = (rounds, places)
        self._by_first[id(rounds[0])] = text


Places = tuple[Place | None, ...]
"""The places of a round's calls and results, in entry order (call, result, ...)."""

_KEPT_ROUND_SEGMENTS = 2_048
"""How many segments of rounds a process keeps (when full, it starts again): the rounds
hold their results, most of them shared with the kept messages."""


def _same(
    kept: tuple[tuple[RoundResults, ...], tuple[Places, ...]],
    rounds: Sequence[RoundResults],
    context: Sequence[Message],
) -> bool:
    return (
        len(kept[0]) == len(rounds)
        and all(a is b for a, b in zip(kept[0], rounds, strict=True))
        and _still_all(context, kept[0], kept[1])
    )


def _still_all(
    context: Sequence[Message], rounds: Sequence[RoundResults], places: Sequence[Places]
) -> bool:
    return all(_still(context, r, p) for r, p in zip(rounds, places, strict=True))


def _places_in(wired: Any) -> Places:
    if not isinstance(wired, dict):
        return ()
    return tuple(
        e.get(name) if isinstance(e, dict) and isinstance(e.get(name), list) else None
        for e in wired.get("entries", ())
        for name in ("call", "result")
    )


def _round_from_wire(wired: Any, process_id: str, context: Sequence[Message]) -> RoundResults:
    if not isinstance(wired, dict):
        raise ValueError("a settled round on the wire is not an object")
    entries = [_held(e, context, process_id, wired) for e in wired.get("entries", ())]
    return RoundResults.model_validate({"process_id": process_id, **wired, "entries": entries})


def _held(entry: Any, context: Sequence[Message], process_id: str, round_: dict[str, Any]) -> Any:
    """`entry` with a call or result given by place taken from `context`, and its
    `call_ref` derived when left out."""
    if not isinstance(entry, dict):
        return entry
    entry = dict(entry)
    if "call_ref" not in entry:
        with contextlib.suppress(KeyError, TypeError):
            seq, index = round_["model_call_seq"], entry["call_index"]
            entry["call_ref"] = tool_call_ref(round_.get("process_id", process_id), seq, index)
    for name in ("call", "result"):
        place = entry.get(name)
        if not isinstance(place, list):
            continue
        try:
            i, j = place
            value = getattr(context[i].parts[j], name, None)
        except (IndexError, TypeError, ValueError):
            value = None
        if value is None:
            raise ValueError(f"a round's {name} names {place!r} in the context, which holds none")
        entry[name] = value
    return entry


def _still(
    context: Sequence[Message], round_: RoundResults, places: tuple[Place | None, ...]
) -> bool:
    """Whether the context still holds, at `places`, the very calls and results."""
    values = [v for e in round_.entries for v in (e.call, e.result)]
    for value, place in zip(values, places, strict=True):
        if place is None:
            continue
        i, j = place
        if i >= len(context) or j >= len(context[i].parts):
            return False
        part = context[i].parts[j]
        if getattr(part, "call", None) is not value and getattr(part, "result", None) is not value:
            return False
    return True


def _held_places(context: Sequence[Message], start: int) -> dict[ToolCall | ToolResult, Place]:
    """The place of each call and result in `context` from `start` on (the first one)."""
    held: dict[ToolCall | ToolResult, Place] = {}
    for i in range(max(start, 0), len(context)):
        for j, part in enumerate(context[i].parts):
            if isinstance(part, ToolResultPart):
                held.setdefault(part.result, [i, j])
            elif isinstance(part, ToolCallPart):
                held.setdefault(part.call, [i, j])
    return held


def _round_wire(
    process_id: str, round_: RoundResults, places: tuple[Place | None, ...]
) -> dict[str, Any]:
    """A round in the compact form, a call or result the context holds by its place, its
    `process_id` and its entries' `call_ref` left out when derived."""
    wired: dict[str, Any] = compact(round_.model_copy(update={"entries": ()}))
    if round_.process_id == process_id:
        del wired["process_id"]
    entries = []
    for n, entry in enumerate(round_.entries):
        out = compact(entry)
        if entry.call_ref == tool_call_ref(process_id, round_.model_call_seq, entry.call_index):
            del out["call_ref"]
        for name, place in (("call", places[2 * n]), ("result", places[2 * n + 1])):
            if place is not None:
                out[name] = place
        entries.append(out)
    wired["entries"] = entries
    return wired


_ROUNDS = _Rounds()


def rounds_to_wire(
    process_id: str, context: Sequence[Message], rounds: Sequence[RoundResults]
) -> list[str]:
    """`rounds` as the JSON texts of their segments (`InteractionState.shared_rounds`)."""
    everywhere: dict[ToolCall | ToolResult, Place] | None = None

    def places(segment: Sequence[RoundResults]) -> dict[ToolCall | ToolResult, Place]:
        """Where the context holds the calls and results of a segment not written before:
        near its end (the latest rounds), else anywhere."""
        nonlocal everywhere
        near = _held_places(context, len(context) - 4 * len(segment) - 64)
        if all(v in near for r in segment for e in r.entries for v in (e.call, e.result)):
            return near
        if everywhere is None:
            everywhere = _held_places(context, 0)
        return everywhere

    return [
        _ROUNDS.text_of(process_id, context, rounds[start : start + SEGMENT], places)
        for start in range(0, len(rounds), SEGMENT)
    ]


def rounds_from_wire(
    texts: Sequence[str], process_id: str, context: Sequence[Message]
) -> list[RoundResults]:
    """The settled rounds the segment texts `texts` stand for, their calls and results
    taken from `context` where they name a place in it."""
    rounds: list[RoundResults] = []
    for text in texts:
        rounds.extend(_ROUNDS.rounds_of(text, process_id, context))
    return rounds


def context_from_wire(texts: Sequence[str]) -> list[Message]:
    """The context the segment texts `texts` stand for."""
    context: list[Message] = []
    for text in texts:
        context.extend(_SEGMENTS.messages_of(text))
    return context


__all__ = [
    "SEGMENT",
    "Place",
    "context_from_wire",
    "context_to_wire",
    "rounds_from_wire",
    "rounds_to_wire",
]

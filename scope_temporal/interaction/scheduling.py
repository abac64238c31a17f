"""Which pending tool calls of a round may start now.

Rules (DESIGN.md 2.4): at most `window` tool calls run at once; calls sharing a
concurrency key never overlap; sequential calls (write/exec by default) never overlap
each other; an exclusive call runs alone and nothing after it starts before it. Calls are
considered in call order, so a later call never overtakes an earlier one it conflicts
with. Delegates are not scheduled here: they all start when their round opens.
"""

from __future__ import annotations

from collections.abc import Sequence

from scope_temporal.interaction.state import CallSlot

_SEQUENTIAL = "\x00sequential"


def _keys(slot: CallSlot) -> set[str]:
    keys = {slot.concurrency_key} if slot.concurrency_key else set()
    if slot.scheduling == "sequential":
        keys.add(_SEQUENTIAL)
    return keys


def startable(slots: Sequence[CallSlot], window: int) -> list[int]:
    """Indexes of the tool slots to start now, in call order.

    Args:
        slots: the round's slots; only `target == "tool"` ones are considered.
        window: MaxConcurrentToolCalls (>= 1).
    """
    tools = [s for s in slots if s.target == "tool"]
    running = [s for s in tools if s.status == "running"]
    if any(s.scheduling == "exclusive" for s in running):
        return []
    busy: set[str] = set().union(*(_keys(s) for s in running)) if running else set()
    in_flight = len(running)
    started: list[int] = []
    for slot in (s for s in tools if s.status == "pending"):
        if slot.scheduling == "exclusive":
            if in_flight == 0:
                started.append(slot.index)
            break
        if in_flight >= window:
            break
        keys = _keys(slot)
        if keys & busy:
            busy |= keys
            continue
        busy |= keys
        in_flight += 1
        started.append(slot.index)
    return started

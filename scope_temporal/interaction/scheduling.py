"""Which pending calls of a round (tool calls and delegates) may start now.

Rules (docs/guarantees.md, "Batches keep their order's meaning"), applied in call order:

 1. A *barrier* (a `sequential` call: write/exec tools by default; or an `exclusive` one)
    overlaps no other call of its batch, tool or delegate: it starts only once every
    earlier call has settled, and no later call starts until it has settled. Both
    classes schedule the same way; `exclusive` states "alone" outright, e.g. for a read
    tool that must not run beside anything.
 2. Between barriers, parallel tool calls overlap up to `window` (MaxConcurrentToolCalls)
    and refill it as any of them settles. Calls sharing a concurrency key never overlap,
    and a later keyed call never overtakes an earlier one that waits for its key.
 3. Delegates start as soon as no earlier barrier is unsettled; they do not count
    against the window (each child has its own budget).

A call waiting for input is still running: it keeps its window slot, and a barrier
waiting for input holds back the rest of its batch.
"""

from __future__ import annotations

from collections.abc import Sequence

from scope_temporal.interaction.state import CallSlot


def _is_barrier(slot: CallSlot) -> bool:
    return slot.target == "tool" and slot.scheduling != "parallel"


def startable(slots: Sequence[CallSlot], window: int) -> list[int]:
    """Indexes of the calls to start now, in call order.

    Args:
        slots: the round's slots; `target == "none"` ones (settled at admission) are
            ignored.
        window: MaxConcurrentToolCalls (>= 1).

    Returns:
        Pending tool and delegate slots that may start without breaking rules 1-3;
        each index is meant to be started at once (the caller marks it running).
    """
    unsettled = [s for s in slots if s.target != "none" and s.status != "settled"]
    running = [s for s in unsettled if s.status == "running"]
    if any(_is_barrier(s) for s in running):
        return []
    in_flight = sum(1 for s in running if s.target == "tool")
    busy = {s.concurrency_key for s in running if s.concurrency_key}
    started: list[int] = []
    for position, slot in enumerate(unsettled):
        if slot.status == "running":
            continue
        if _is_barrier(slot):
            if position == 0:  # every earlier call has settled, nothing else runs
                started.append(slot.index)
            break
        if slot.target == "delegate":
            started.append(slot.index)
            continue
        key = slot.concurrency_key
        blocked = in_flight >= window or (key is not None and key in busy)
        if key is not None:
            busy.add(key)  # held, or reserved so no later call overtakes this one
        if not blocked:
            in_flight += 1
            started.append(slot.index)
    return started

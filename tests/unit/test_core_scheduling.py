"""CONFORMANCE 14-16 on the pure scheduler (`scope_temporal.interaction.scheduling`).

A sequential (write/exec by default) or exclusive call is a barrier: it overlaps no other
call of its batch, tool or delegate. Parallel calls overlap up to the window; calls
sharing a concurrency key never overlap.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scope_temporal.chat import ToolCall
from scope_temporal.interaction.scheduling import startable
from scope_temporal.interaction.state import CallSlot


def slot(
    index: int, scheduling: str = "parallel", status: str = "pending", **extra: Any
) -> CallSlot:
    return CallSlot(
        index=index,
        call=ToolCall(id=f"c{index}", name="t"),
        effect_id=f"e{index}",
        target=extra.pop("target", "tool"),
        scheduling=scheduling,  # type: ignore[arg-type]
        status=status,  # type: ignore[arg-type]
        **extra,
    )


def batch(*spec: str) -> list[CallSlot]:
    """Slots from short names: r (parallel), w (sequential), x (exclusive), d (delegate);
    a suffix `*` means running, `.` settled."""
    kinds = {"r": "parallel", "w": "sequential", "x": "exclusive", "d": "parallel"}
    statuses = {"": "pending", "*": "running", ".": "settled"}
    return [
        slot(
            i,
            kinds[s[0]],
            statuses[s[1:]],
            target="delegate" if s[0] == "d" else "tool",
        )
        for i, s in enumerate(spec)
    ]


# --- 14: the window ---------------------------------------------------------------------


def test_c14_startable_fills_the_window_in_call_order() -> None:
    slots = [slot(0), slot(1), slot(2)]
    assert startable(slots, 2) == [0, 1]
    assert startable(slots, 5) == [0, 1, 2]
    assert startable(slots, 1) == [0]


def test_c14_startable_counts_running_calls_and_ignores_settled_ones() -> None:
    slots = [slot(0, status="running"), slot(1), slot(2)]
    assert startable(slots, 2) == [1]
    slots = [slot(0, status="settled"), slot(1, status="running"), slot(2), slot(3)]
    assert startable(slots, 2) == [2]
    assert startable([slot(0, status="running"), slot(1, status="running"), slot(2)], 2) == []


def test_c14_delegates_do_not_count_against_the_window_and_rejections_are_skipped() -> None:
    slots = [
        slot(0, target="delegate", status="running"),
        slot(1, target="none", status="settled"),
        slot(2, target="delegate"),
        slot(3),
        slot(4),
    ]
    assert startable(slots, 1) == [2, 3]
    # a full window holds back later tool calls, not later delegates
    assert startable(batch("r*", "r", "d"), 1) == [2]


# --- 15: concurrency keys -----------------------------------------------------------------


def test_c15_startable_never_overlaps_a_concurrency_key() -> None:
    slots = [
        slot(0, concurrency_key="k"),
        slot(1, concurrency_key="k"),
        slot(2, concurrency_key="j"),
    ]
    assert startable(slots, 3) == [0, 2]
    running = [slot(0, concurrency_key="k", status="running"), slot(1, concurrency_key="k")]
    assert startable(running, 3) == []
    done = [slot(0, concurrency_key="k", status="settled"), slot(1, concurrency_key="k")]
    assert startable(done, 3) == [1]


def test_c15_a_later_keyed_call_never_overtakes_an_earlier_one_waiting_for_its_key() -> None:
    slots = [
        slot(0, concurrency_key="k", status="running"),
        slot(1, concurrency_key="k"),
        slot(2, concurrency_key="k"),
        slot(3),
    ]
    assert startable(slots, 4) == [3]


# --- 16: barriers -------------------------------------------------------------------------


def test_c16_a_sequential_call_waits_for_every_earlier_call_and_holds_back_later_ones() -> None:
    assert startable(batch("r", "w", "r"), 3) == [0]
    assert startable(batch("r*", "w", "r"), 3) == []
    assert startable(batch("r.", "w", "r"), 3) == [1]
    assert startable(batch("r.", "w*", "r"), 3) == []
    assert startable(batch("r.", "w.", "r", "r"), 3) == [2, 3]  # reads overlap again


def test_c16_sequential_calls_follow_one_another_in_call_order() -> None:
    assert startable(batch("w", "w", "r"), 3) == [0]
    assert startable(batch("w*", "w", "r"), 3) == []
    assert startable(batch("w.", "w", "r"), 3) == [1]


def test_c16_an_exclusive_call_runs_alone() -> None:
    assert startable(batch("x", "r", "r"), 3) == [0]
    assert startable(batch("r", "x", "r"), 3) == [0]
    assert startable(batch("r*", "x", "r"), 3) == []
    assert startable(batch("x*", "r", "r"), 3) == []
    assert startable(batch("x.", "r", "r"), 3) == [1, 2]


def test_c16_a_barrier_excludes_delegates_of_its_batch_too() -> None:
    assert startable(batch("d", "w", "d"), 3) == [0]
    assert startable(batch("d*", "w", "d"), 3) == []
    assert startable(batch("d.", "w", "d"), 3) == [1]
    assert startable(batch("d.", "w*", "d"), 3) == []
    assert startable(batch("d.", "w.", "d"), 3) == [2]
    assert startable(batch("r", "d", "x", "d"), 3) == [0, 1]


# --- the rules hold for any batch ---------------------------------------------------------

CLASSES = st.sampled_from(["parallel", "sequential", "exclusive", "delegate"])
CALL = st.tuples(CLASSES, st.sampled_from([None, "k", "j"]))


@settings(max_examples=300, deadline=None)
@given(
    calls=st.lists(CALL, min_size=1, max_size=7),
    window=st.integers(min_value=1, max_value=4),
    picks=st.lists(st.integers(min_value=0, max_value=6), max_size=40),
)
def test_c14_c15_c16_hold_for_random_batches_and_settle_orders(
    calls: list[tuple[str, str | None]], window: int, picks: list[int]
) -> None:
    slots = [
        slot(
            i,
            "parallel" if cls == "delegate" else cls,
            target="delegate" if cls == "delegate" else "tool",
            concurrency_key=None if cls == "delegate" else key,
        )
        for i, (cls, key) in enumerate(calls)
    ]
    picks = list(picks)
    while any(s.status != "settled" for s in slots):
        for index in startable(slots, window):
            assert slots[index].status == "pending"
            slots[index].status = "running"
            if slots[index].target == "tool" and slots[index].scheduling != "parallel":
                later = slots[index + 1 :]
                assert all(x.status == "pending" for x in later), "a call overtook a barrier"
        running = [s for s in slots if s.status == "running"]
        assert running, "nothing runs while calls are pending: the batch would stall"
        tools = [s for s in running if s.target == "tool"]
        assert len(tools) <= window
        keys = [s.concurrency_key for s in tools if s.concurrency_key]
        assert len(keys) == len(set(keys)), "two calls with one key overlap"
        for s in running:
            if s.target == "tool" and s.scheduling != "parallel":
                assert running == [s], "a barrier overlaps another call"
                assert all(x.status == "settled" for x in slots[: s.index]), "barrier too early"
        running[(picks.pop(0) if picks else 0) % len(running)].status = "settled"

"""The model-based test of sessions (issue 25, "the test that finds the next ones"): a
hypothesis `RuleBasedStateMachine` drives one session through the public API in any order
a host could (sends with new, repeated and conflicting ids, from a second handle with the
same or another identity, steers while a turn runs, `end`, alone or racing a send; each
model call completing, calling a tool, failing definitely or going unknown and being
resolved; approval waits answered every way; continue-as-new after every turn; a host's
`result()` timing out; subscribers following from the start and from a stored position),
and after every step checks the session against the reference model
(tests/unit/session_model.py). The world (scripted model, tools, approval policy, limit)
is tests/unit/session_model_world.py; the live variant reuses this machine
(tests/live/test_live_session_model.py).

Hunting for a defect with other seeds:
    python -m tests.unit.test_session_model --hunt 1,2,3 --examples 200
reports, per seed, at which example the first failure was found (none: "not found").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from functools import wraps
from typing import Any, ClassVar, TypeVar

from hypothesis import HealthCheck, Phase, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from scope_temporal import Event, Message
from scope_temporal.errors import ScopeError
from scope_temporal.interaction.session_values import SessionSnapshot
from tests.unit.session_model import Model, text_of
from tests.unit.session_model_world import CURRENT, Host, LocalHost, Outcome, World, ticket_of

T = TypeVar("T")
SETTINGS = settings(
    max_examples=300,
    stateful_step_count=50,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
EXAMPLES = [0]  # machines made so far (one per example)
FOUND: list[int] = []  # the example at which the first failure was seen (hunting)
FIRST: list[tuple[BaseException | None, list[str]]] = []  # that failure, and what was done


class Hung(AssertionError):
    """A call did not return or raise within the bound."""


def guarded(step: Callable[..., None]) -> Callable[..., None]:
    """Record the example of the first failure (the hunting report)."""

    @wraps(step)
    def run(self: SessionModel, *args: Any, **kwargs: Any) -> None:
        try:
            step(self, *args, **kwargs)
        except BaseException:
            self.broken = True
            if not FOUND:
                FOUND.append(EXAMPLES[0])
                FIRST.append((sys.exc_info()[1], list(self.model.log) if self.ready else []))
            raise

    return run


class SessionModel(RuleBasedStateMachine):
    """One session, driven by rules; the reference model checks every step."""

    limits: ClassVar[tuple[int, ...]] = (12_000, 14_000, 20_000)
    instructions: ClassVar[tuple[str, ...]] = ("Be brief.", "I" * 3_000)
    everies: ClassVar[tuple[int, ...]] = (1, 2, 100)
    max_subscribers: ClassVar[int] = 4
    gated: ClassVar[bool] = True
    """Rules are enabled by the state they need; False (live): every rule is always
    enabled and does nothing without it, so that what hypothesis draws never depends on
    timing (it requires the same draws to lead to the same rules)."""

    def __init__(self) -> None:
        super().__init__()
        EXAMPLES[0] += 1
        self.broken = False
        self.ready = False
        self.sent = 0
        self.texts: dict[str, tuple[str, int]] = {}  # id -> (latest text tried, variant)
        self.remembered_at: dict[str, bool] = {}
        self.subscribers: list[tuple[tuple[int, int] | None, list[Event], asyncio.Future[Any]]] = []
        self.results_read: set[int] = set()
        self.started_host = False
        self.timed: set[str] = set()  # turns whose result() a host gave up on
        self.running: Any = None  # after each step: the running turn's handle,
        self.pending: list[Any] = []  # its approval waits
        self.unknown: list[Any] = []  # and its unknown model calls

    # --- running coroutines on the host's loop ---------------------------------------

    def open_loop(self) -> None:
        self.loop = asyncio.new_event_loop()

    def close_loop(self) -> None:
        pending = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            self.loop.run_until_complete(asyncio.wait(pending, timeout=2))
        self.loop.close()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coroutine)

    @staticmethod
    async def on_loop(function: Callable[[], T]) -> T:
        """`function()` on the host's loop (the world's futures belong to it)."""
        return function()

    def make_host(self, world: World, every: int) -> Host:
        return LocalHost(world, f"s{EXAMPLES[0]}", every=every)

    def spawn(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Future[Any]:
        return asyncio.ensure_future(coroutine, loop=self.loop)

    # --- every call is bounded ---------------------------------------------------------

    async def call(self, what: str, awaitable: Awaitable[T]) -> T | ScopeError:
        """The call's value, or the typed error it raised; anything else fails the test."""
        try:
            return await asyncio.wait_for(awaitable, self.host.bound)
        except ScopeError as error:
            return error
        except TimeoutError as error:
            raise Hung(f"{what} did not return within {self.host.bound}s") from error

    async def settle(self) -> SessionSnapshot:
        """Wait until nothing moves by itself: a model call waits for its rule, or the
        session is idle or ended, or its turn waits on the host."""
        deadline = time.monotonic() + self.host.bound
        while True:
            snap = await self.snapshot()
            current = snap.turns[-1] if snap.turns else None
            turn = self.turn(current.turn) if current and current.status == "running" else None
            self.running, self.pending, self.unknown = turn, [], []
            if turn is not None:
                self.pending, self.unknown = await self.host.waits(turn)
            if snap.status in ("idle", "ended", "failed"):
                break
            # once `end` returned, the session must reach `ended` within the bound (live, its
            # turn's cancellation may still be on its way when `end` returns)
            if not self.model.end_returned and (self.world.waiting or self.pending or self.unknown):
                break
            if time.monotonic() > deadline:
                raise Hung(f"the session did not settle: {snap!r}\n" + "\n".join(self.model.log))
            await asyncio.sleep(self.host.poll)
        await self.read_results(snap)
        return snap

    async def read_results(self, snap: SessionSnapshot) -> None:
        """A host reads each ended turn's result (it returns, or raises a typed error)."""
        for record in snap.turns:
            if record.status != "running" and record.turn not in self.results_read:
                self.results_read.add(record.turn)
                turn = self.turn(record.turn)
                if turn is None:
                    continue  # a turn withdrawn before it started has no handle
                await self.call(f"turn {record.turn}'s result()", self.host.result(turn))

    def turn(self, number: int) -> Any:
        """The handle of turn `number`, None while its Interaction has not started."""
        try:
            return self.host.turn(self.main, number)
        except ScopeError:
            return None

    async def snapshot(self) -> SessionSnapshot:
        snap = await self.call("snapshot()", self.host.snapshot(self.main))
        assert isinstance(snap, SessionSnapshot), f"snapshot() raised {snap!r}"
        return snap

    async def transcript(self) -> tuple[Message, ...]:
        messages = await self.call("transcript()", self.host.transcript(self.main))
        assert isinstance(messages, tuple), f"transcript() raised {messages!r}"
        return messages

    # --- set up ------------------------------------------------------------------------

    @initialize(limit=st.integers(0, 2), instructions=st.integers(0, 1), every=st.integers(0, 2))
    def start(self, limit: int, instructions: int, every: int) -> None:
        limit = self.limits[limit % len(self.limits)]
        every = self.everies[every % len(self.everies)]
        instructions = self.instructions[instructions % len(self.instructions)]
        self.open_loop()
        self.world = World(limit=limit, instructions=instructions)
        CURRENT[:] = [self.world]
        self.model = Model(instructions=instructions)
        self.model.log.append(f"limit {limit}, instructions {len(instructions)} B, every {every}")
        self.host = self.make_host(self.world, every)
        self.main = self.host.handle({"user": "ada"})
        self.ready = True
        self.run(self.settle())

    def enabled(self, condition: object) -> bool:
        return self.ready and (not self.gated or bool(condition))

    def sizes(self) -> list[int]:
        room = self.world.limit - len(self.world.instructions)
        return [40, self.world.limit // 4, int(self.world.limit * 0.45), room - 1_000, room - 300]

    # --- sends -------------------------------------------------------------------------

    async def send(self, handle: Any, message_id: str, text: str, *, mismatch: bool) -> None:
        outcome = await self.call(f"send({message_id})", self.host.send(handle, text, message_id))
        self.model.sent(message_id, text, outcome, mismatch=mismatch)
        if isinstance(outcome, ScopeError):
            snap = await self.snapshot()
            self.model.check_refused(message_id, text, snap, await self.transcript())

    def pick(self, kind: str, size: int, index: int) -> tuple[str, str]:
        if kind == "new" or not self.texts:
            self.sent += 1
            message_id = f"m{self.sent}"
            text, variant = text_of(message_id, 0, size), 0
        else:
            message_id = sorted(self.texts)[index % len(self.texts)]
            text, variant = self.texts[message_id]
            if kind == "other":
                variant += 1
                text = text_of(message_id, variant, size)
        self.texts[message_id] = (text, variant)
        return message_id, text

    @precondition(lambda self: self.ready)
    @rule(
        kind=st.sampled_from(["new", "new", "new", "same", "other"]),
        size=st.sampled_from([0, 0, 1, 2, 3, 3, 4, 4]),
        index=st.integers(0, 50),
        handle=st.sampled_from(["main", "main", "main", "same identity", "other identity"]),
        burst=st.sampled_from([1, 1, 1, 3]),
    )
    @guarded
    def send_message(self, kind: str, size: int, index: int, handle: str, burst: int) -> None:
        """A message (`burst`: that many, one after another, as a user typing fast)."""
        if handle == "other identity" and not self.started_host:
            handle = "main"  # the first send starts the session with the main identity
        picked = [self.pick(kind, self.sizes()[size], index + n) for n in range(burst)]
        self.model.log.append(f"({handle})")
        sender = {
            "main": lambda: self.main,
            "same identity": lambda: self.host.handle({"user": "ada"}),
            "other identity": lambda: self.host.handle({"user": "bob"}),
        }[handle]()
        self.started_host = True

        async def go() -> None:
            for message_id, text in picked:
                await self.send(sender, message_id, text, mismatch=handle == "other identity")
            await self.settle()

        self.run(go())

    @precondition(lambda self: self.enabled(not self.model.end_returned))
    @rule(racing_send=st.booleans(), now=st.sampled_from([True, False, False]))
    @guarded
    def end(self, racing_send: bool, now: bool) -> None:
        """End the session (alone, or racing a send); `now` False: the host waits (a no-op
        step, so that most examples run on before their session ends)."""
        if not now or self.model.end_returned:
            return
        self.model.end_asked = True

        async def go() -> None:
            if racing_send:
                message_id, text = self.pick("new", 40, 0)
                self.started_host = True
                self.model.log.append("end, racing a send")
                await asyncio.gather(
                    self.send(self.main, message_id, text, mismatch=False),
                    self.call("end()", self.host.end(self.main)),
                )
            else:
                self.model.log.append("end")
                ended = await self.call("end()", self.host.end(self.main))
                assert ended is None, f"end() raised {ended!r}"
            self.model.end_returned = True
            await self.settle()

        self.run(go())

    # --- the model, approvals, unknowns --------------------------------------------------

    @precondition(lambda self: self.enabled(self.world.waiting or self.pending or self.unknown))
    @rule(
        outcome=st.sampled_from(
            ["text", "text", "lookup", "restart", "both", "both", "task", "reject", "unknown"]
        ),
        big=st.booleans(),
        answer=st.sampled_from(["approve", "approve", "remember", "deny", "off-schema"]),
    )
    @guarded
    def the_world_moves(self, outcome: Outcome, big: bool, answer: str) -> None:
        """What the host waits on moves: the model call waiting answers as `outcome`, or
        the approval wait is answered with `answer`, or the unknown call is resolved."""
        if not (self.world.waiting or self.pending or self.unknown):
            return
        if self.world.waiting:
            self.model_answers(outcome, big)
        elif self.pending:
            self.run(self.answer_approval(answer))
        else:
            self.model.log.append("retry the unknown model call")
            retried = self.host.retry(self.running, self.unknown[0])
            self.run(self.call("retry_model_call()", retried))
        self.run(self.settle())

    def model_answers(self, outcome: Outcome, big: bool) -> None:
        # a batch of both: the read tool's result settles while the approval waits
        size = self.world.limit // 4 if big or outcome == "both" else 20
        ticket = self.run(self.on_loop(lambda: self.world.answer(outcome, size)))
        self.model.log.append(f"model: {outcome}" + (f" {ticket}" if ticket else ""))
        if ticket is not None:
            self.remembered_at[ticket] = self.model.remembered
        if outcome == "reject":
            self.model.rejects += 1

    async def answer_approval(self, answer: str) -> None:
        turn, wait = self.running, self.pending[0]
        ticket = ticket_of(wait)
        response: dict[str, Any] = {
            "approve": {"decision": "approve"},
            "remember": {"decision": "approve", "remember": True},
            "deny": {"decision": "deny", "reason": "no"},
            "off-schema": {"decision": "maybe"},
        }[answer]
        self.model.log.append(f"approval {ticket}: {answer}")
        if answer in ("approve", "remember") and ticket is not None:
            self.model.approved.add(ticket)
        outcome = await self.call(
            "answer()", self.host.answer(turn, wait, f"a{len(self.model.log)}", response)
        )
        if answer == "off-schema":
            assert isinstance(outcome, ScopeError), f"an off-schema answer was taken: {outcome}"
        elif answer == "remember" and not isinstance(outcome, ScopeError):
            self.model.remembered = True

    @precondition(
        lambda self: self.enabled(self.running is not None and self.running.id not in self.timed)
    )
    @rule()
    @guarded
    def result_times_out(self) -> None:
        if self.running is None or self.running.id in self.timed:
            return
        self.timed.add(self.running.id)

        async def go() -> None:
            self.model.log.append("a host's result() times out")
            with contextlib.suppress(TimeoutError, ScopeError):  # it gives up, or it ended
                await asyncio.wait_for(self.host.result(self.running), 0.01)
            await self.settle()

        self.run(go())

    @precondition(lambda self: self.enabled(any(not g.is_set() for g in self.world.gates)))
    @rule()
    @guarded
    def a_task_notifies(self) -> None:
        """A background task a turn launched ends: it tells the session (the running turn
        takes it as a steer, or the next turn before its first model call)."""
        if all(g.is_set() for g in self.world.gates):
            return
        self.model.log.append("a background task ends")
        self.run(self.on_loop(self.world.notify))
        self.run(self.settle())

    # --- subscribers -------------------------------------------------------------------

    async def follow(self, after: tuple[int, int] | None, into: list[Event]) -> None:
        async for event in self.host.events(self.main, after):
            into.append(event)

    @precondition(
        lambda self: self.enabled(
            self.model.accepted and len(self.subscribers) < self.max_subscribers
        )
    )
    @rule(index=st.integers(0, 200))
    @guarded
    def subscribe(self, index: int) -> None:
        """The first subscriber follows from the start; later ones from a position the
        first one read (as a host stores it to resume)."""
        if not self.model.accepted or len(self.subscribers) >= self.max_subscribers:
            return
        position = None
        if self.subscribers:
            first = self.subscribers[0][1]
            if not first:
                return
            event = first[index % len(first)]
            position = (event.turn or 1, event.offset)
        seen: list[Event] = []
        self.subscribers.append((position, seen, self.spawn(self.follow(position, seen))))
        self.run(self.settle())

    # --- invariants --------------------------------------------------------------------

    @invariant()
    @guarded
    def holds(self) -> None:
        if not self.ready:
            return

        async def go() -> None:
            snap = await self.snapshot()
            self.model.check_session(snap, await self.transcript())
            self.model.check_requests(self.world.requests)
            self.model.check_covered(self.world.covered_runs, self.remembered_at)
            for after, seen, task in self.subscribers:
                if task.done() and task.exception() is not None:
                    raise AssertionError(f"a subscriber failed: {task.exception()!r}")
                if after is None:
                    Model.check_partial(seen)

        self.run(go())

    def teardown(self) -> None:
        if not self.ready:
            return
        try:
            if not self.broken:
                guarded(lambda self: self.run(self.finish()))(self)
        finally:
            self.run(self.on_loop(self.world.release))
            self.run(self.host.close())
            self.close_loop()

    async def finish(self) -> None:
        """End the session; every subscriber ends with it and read each turn's stream once."""
        ended = await self.call("end()", self.host.end(self.main))
        assert ended is None, f"end() raised {ended!r}"
        self.model.end_asked = self.model.end_returned = True
        snap = await self.settle()
        self.model.check_session(snap, await self.transcript())
        streams: dict[int, list[Event]] = {}
        for record in snap.turns:
            turn = self.turn(record.turn)
            if turn is None:
                streams[record.turn] = []
                continue
            read = await self.call(
                f"turn {record.turn}'s events()", _collect(self.host.turn_events(turn))
            )
            # a turn cancelled before its workflow started has no stream
            assert isinstance(read, list) or record.status == "canceled", read
            streams[record.turn] = read if isinstance(read, list) else []
        for after, seen, task in self.subscribers:
            await self.call("a subscriber's events()", asyncio.shield(task))
            if after is None:
                Model.check_stream(seen, streams)
            else:
                whole = self.subscribers[0][1]
                want = [(e.turn, e.offset) for e in whole if (e.turn or 0, e.offset) > after]
                got = [(e.turn, e.offset) for e in seen]
                assert got == want, f"from {after}: read {got}, the stream after it is {want}"


async def _collect(events: Any) -> list[Event]:
    return [e async for e in events]


def test_sessions_keep_their_promises_whatever_a_host_does() -> None:
    run_state_machine_as_test(SessionModel, settings=SETTINGS)


def test_seam_16_steers_taken_during_a_model_call_wait_for_room_after_its_tool_batch() -> None:
    """Limit 12,000 B: a turn's model call waits; two 40 B messages and a 10,991 B one
    steer it (they fit the next call as it stands); the model calls the read tool (a 20 B
    result): the call after the batch takes the steers that fit, the large one waits for
    the call after that, and the turn completes with every message in the transcript once
    (found by this model; before the fix the turn failed `interaction.payload.too_large`)."""
    machine = SessionModel()
    try:
        machine.start(limit=0, instructions=0, every=2)
        for size in (0, 0, 0, 3):
            machine.send_message(kind="new", size=size, index=0, handle="main", burst=1)
        machine.the_world_moves(outcome="lookup", big=False, answer="approve")
        machine.holds()
        for _ in range(4):
            machine.the_world_moves(outcome="text", big=False, answer="approve")
            machine.holds()
    finally:
        machine.teardown()


def hunt(seeds: list[int], examples: int, machine: type[RuleBasedStateMachine]) -> int:
    """Run `examples` examples per seed (no shrinking); print where each first failed."""
    found_any = 0
    for value in seeds:
        EXAMPLES[0] = 0
        FOUND.clear()
        hunting = settings(
            SETTINGS, max_examples=examples, derandomize=False, phases=[Phase.generate]
        )
        started = time.monotonic()
        try:
            seeded = hypothesis_seed(value)(type(f"Seeded{value}", (machine,), {}))
            run_state_machine_as_test(seeded, settings=hunting)
            where = "not found"
        except BaseException as error:  # the report names the first failure
            found_any += 1
            first = str(error).strip().splitlines()[0][:160] if str(error).strip() else ""
            where = (
                f"found at example {FOUND[0] if FOUND else '?'}: {type(error).__name__}: {first}"
            )
        print(f"seed {value}: {where} ({time.monotonic() - started:.1f}s)", flush=True)
    return found_any


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hunt", default="1,2,3", help="comma-separated seeds")
    parser.add_argument("--examples", type=int, default=200)
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.hunt.split(",") if s]
    hunt(seeds, args.examples, SessionModel)
    return 0


if __name__ == "__main__":
    sys.exit(main())

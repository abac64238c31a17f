"""Follow a running Interaction tree live through its event stream, and print what happens.

Shown as it happens: the text a model streams while it answers (when its adapter
streams), each model response (what it decided), each call and delegate started, each
round's results with their dispositions (in call order, once the round is complete),
steers and validator feedback, background tasks (launched, each new progress headline,
how they ended), tool input requests (answered at the terminal when an answerer is given),
unknown effects with the exact `resolve` command, and finally the output or the failure.
Nothing is polled: each line is an event of the stream (`InteractionHandle.events`); a
dropped connection resumes from the last offset read.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import uuid
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass

import click
from temporalio.service import RPCError

from scope_temporal.cli._answers import Answerer
from scope_temporal.cli._render import (
    INDENT,
    answer_command,
    call_label,
    depth,
    effect_label,
    model_line,
    not_called_line,
    output_lines,
    result_line,
    retry_command,
    settle_command,
    shorten,
    task_line,
)
from scope_temporal.client import InteractionHandle
from scope_temporal.errors import (
    EventOffsetError,
    InteractionCanceled,
    InteractionFailed,
    InteractionNotFound,
    NoSuchWait,
    ScopeError,
)
from scope_temporal.ids import ToolCallRef
from scope_temporal.interaction.events import (
    CanceledEvent,
    CompletedEvent,
    Event,
    FailedEvent,
    FeedbackEvent,
    ModelSettledEvent,
    SteerAppliedEvent,
    TaskProgressEvent,
    TextEvent,
    ToolProgressEvent,
    ToolSettledEvent,
    ToolStartedEvent,
    UnknownOpenedEvent,
    WaitOpenedEvent,
)
from scope_temporal.interaction.snapshot import PendingToolInput, TaskSnapshot
from scope_temporal.outputs import Output

_RECONNECT_DELAYS = (0.5, 1.0, 2.0, 4.0)
"""Seconds before each try to follow again after the connection dropped."""


@dataclass
class Outcome:
    """How following ended."""

    status: str
    output: Output | None = None
    error: str | None = None


class _Stop(Exception):
    def __init__(self, outcome: Outcome) -> None:
        self.outcome = outcome


class Follower:
    """Print the progress of one Interaction until it ends.

    Args:
        handle: the Interaction.
        answer: answers tool input waits (e.g. at the terminal); None prints how to answer.
        stop_unanswered: end (status `waiting`) when the answerer leaves a wait open,
            instead of following on until someone answers it.
        command_args: connection options appended to the commands it prints.
    """

    def __init__(
        self,
        handle: InteractionHandle,
        *,
        answer: Answerer | None = None,
        stop_unanswered: bool = False,
        command_args: Sequence[str] = (),
    ) -> None:
        self.handle = handle
        self.answer = answer
        self.stop_unanswered = stop_unanswered
        self.command_args = tuple(command_args)
        self._names: dict[str, str] = {}  # Interaction -> its Definition
        self._calls: dict[str, ToolStartedEvent] = {}  # child process -> its start
        self._round_sizes: dict[tuple[str, int], int] = {}  # (Interaction, seq) -> calls
        self._results: dict[tuple[str, int], list[ToolSettledEvent]] = {}
        self._tasks: dict[str, TaskSnapshot] = {}
        self._open_stream: tuple[str, int] | None = None  # the line streamed text goes on
        self._last = -1  # offset of the last event handled

    async def follow(self) -> Outcome:
        try:
            async with contextlib.aclosing(self._events()) as events:
                async for event in events:
                    self._last = event.offset
                    await self._show(event)
        except _Stop as stop:
            return stop.outcome
        return await self._result()  # the stream ended without the root's end

    async def show(self, event: Event) -> Outcome | None:
        """Print one event of this Interaction's tree, read from any stream (a session's);
        how it ended once the event is its end."""
        try:
            await self._show(event)
        except _Stop as stop:
            return stop.outcome
        return None

    async def _events(self) -> AsyncGenerator[Event, None]:
        """The stream from the last offset handled on; reconnects when the connection
        drops (a few times, with a pause)."""
        for delay in (*_RECONNECT_DELAYS, None):
            after = self._last if self._last >= 0 else None
            try:
                async for event in self.handle.events(after=after):
                    yield event
                return
            except InteractionNotFound:
                raise click.ClickException(f"no interaction {self.handle.id!r}") from None
            except EventOffsetError:
                raise
            except (RPCError, ScopeError):
                if delay is None:
                    raise
                await asyncio.sleep(delay)

    async def _show(self, event: Event) -> None:
        pid = event.process_id
        match event:
            case TextEvent():
                self._stream(event)
            case ModelSettledEvent():
                if event.not_called is not None:
                    line = not_called_line(
                        event.model_call_seq, event.model or "?", event.not_called, event.retried
                    )
                    self._say(pid, [line])
                if event.message is not None:
                    self._round_sizes[(pid, event.model_call_seq)] = len(event.message.tool_calls)
                    self._say(pid, [model_line(event.model_call_seq, event.message)])
            case ToolStartedEvent():
                self._calls[event.child_id] = event
                if event.definition is not None:
                    self._names[event.child_id] = event.definition
                what = call_label(event.call, 24)
                self._say(pid, [f"{INDENT}▶ {event.target} {what} started"])
            case ToolSettledEvent():
                self._settled(event)
            case SteerAppliedEvent():
                for message in event.messages:
                    self._say(pid, [f"✎ steer: {shorten(message.text, 100)}"])
            case FeedbackEvent():
                text = shorten(event.text, 100)
                self._say(pid, [f"✎ completion validator sent the reply back: {text}"])
            case TaskProgressEvent():
                self._task(event.task)
            case ToolProgressEvent():
                total = "" if event.total is None else f"/{event.total:g}"
                text = f" {shorten(event.message, 80)}" if event.message else ""
                self._say(pid, [f"{INDENT}… {event.progress:g}{total}{text}"])
            case UnknownOpenedEvent():
                self._unknown(event)
            case WaitOpenedEvent():
                await self._wait(event.wait)
            case CompletedEvent() | FailedEvent() | CanceledEvent() if pid == self.handle.id:
                raise _Stop(await self._finish(event))
            case _:
                pass  # model_started, waits answered, unknowns settled, a delegate's end

    def _settled(self, event: ToolSettledEvent) -> None:
        """A round's results are shown together, in call order, once all are in."""
        pid = event.process_id
        key = (pid, ToolCallRef.parse(event.ref).model_call_seq)
        results = self._results.setdefault(key, [])
        results.append(event)
        if len(results) < self._round_sizes.get(key, 0):
            return
        for settled in sorted(results, key=lambda e: e.entry.call_index):
            line = result_line(settled.entry, delegate=settled.delegate)
            self._say(pid, [INDENT + line])
        del self._results[key]

    def _task(self, task: TaskSnapshot) -> None:
        """A line when a task starts, when its progress headline moves, and when it ends."""
        shown = self._tasks.get(task.task_id)
        if shown is not None and (shown.status, shown.progress.events) == (
            task.status,
            task.progress.events,
        ):
            return
        if shown is None:
            self._say(task.task_id, [f"{INDENT}⇢ {task.tool} continues in the background"])
        self._tasks[task.task_id] = task
        self._say(task.task_id, [INDENT + task_line(task)])

    def _unknown(self, event: UnknownOpenedEvent) -> None:
        command = settle_command(
            self.handle.id, event.effect_id, event.effect_kind, self.command_args
        )
        label = effect_label(event.call, event.model_call_seq, event.definition)
        retry = retry_command(self.handle.id, event.effect_id, self.command_args)
        self._say(
            event.process_id,
            [
                f"! outcome unknown: {label}",
                f"{INDENT}why: {shorten(event.diagnostic, 110)}",
                f"{INDENT}nothing is retried by itself; investigate, then settle it with:",
                f"{INDENT}{command}",
                *(
                    [f"{INDENT}or send the request again (a new call):", INDENT + retry]
                    if event.effect_kind == "model"
                    else []
                ),
            ],
        )

    async def _wait(self, wait: PendingToolInput) -> None:
        started = self._calls.get(wait.process_id)
        task = self._tasks.get(wait.process_id)
        name = started.call.name if started else task.tool if task else wait.process_id
        how = f"answer it with: {answer_command(self.handle.id, wait, self.command_args)}"
        if self.answer is None:
            asked = f"? {name} {_asks(wait)}: {wait.prompt_text}"
            self._say(wait.process_id, [asked, INDENT + how])
            return
        while True:
            self._end_stream_line()
            value = await self.answer(wait, name)
            if value is None:
                unanswered = f"{name} is waiting for input; {how}"
                self._echo(f"{INDENT}left open; {unanswered}")
                if self.stop_unanswered:
                    raise _Stop(Outcome("waiting", error=unanswered))
                return
            try:
                await self.handle.answer(wait, f"cli-{uuid.uuid4().hex[:8]}", value)
            except NoSuchWait:
                self._echo(f"{INDENT}(already answered elsewhere)")
            except ScopeError as error:
                self._echo(f"{INDENT}✗ refused: {error}")
                continue  # ask again
            else:
                self._echo(f"{INDENT}→ answer sent")
            return

    async def _finish(self, event: Event) -> Outcome:
        for task in self._tasks.values():
            if not task.ended:
                self._say(
                    task.task_id,
                    [
                        f"{INDENT}(task {task.task_id} goes on in the background; look at it "
                        f"with: scope-temporal inspect {self.handle.id})"
                    ],
                )
        self._end_stream_line()
        if isinstance(event, CompletedEvent):
            return Outcome("completed", output=event.output)
        if isinstance(event, FailedEvent):
            failure = event.failure
            spent = f" ({failure.usage} used)" if failure.usage and failure.usage.models else ""
            return Outcome("failed", error=f"[{failure.code}] {failure.message}{spent}")
        return await self._result()

    async def _result(self) -> Outcome:
        try:
            output = await self.handle.result()
        except InteractionCanceled as error:
            return Outcome("canceled", error=str(error))
        except InteractionFailed as error:
            return Outcome("failed", error=str(error))
        return Outcome("completed", output=output)

    # --- printing --------------------------------------------------------------------

    def _say(self, process_id: str, lines: list[str]) -> None:
        for line in lines:
            self._echo(self._prefix(process_id) + line)

    def _prefix(self, process_id: str) -> str:
        level = depth(process_id)
        return INDENT * level + (f"[{self._definition(process_id)}] " if level else "")

    def _definition(self, process_id: str) -> str:
        """The Definition of the Interaction owning `process_id` (itself or its tool call)."""
        owner = re.sub(r"/(tool|task)/\d+/\d+$", "", process_id)
        return self._names.get(owner, "delegate")

    def _echo(self, line: str) -> None:
        self._end_stream_line()
        click.echo(line)

    def _end_stream_line(self) -> None:
        if self._open_stream is not None:
            click.echo("")
            self._open_stream = None

    def _stream(self, event: TextEvent) -> None:
        """Streamed text goes on one line per model call, as it comes."""
        key = (event.process_id, event.model_call_seq)
        if self._open_stream != key:
            self._end_stream_line()
            click.echo(f"{self._prefix(event.process_id)}model #{key[1]} ▸ ", nl=False)
        click.echo(event.text.replace("\n", " "), nl=False)
        self._open_stream = key


def _asks(wait: PendingToolInput) -> str:
    return "needs approval" if wait.kind == "approval" else "asks"


def print_outcome(outcome: Outcome) -> None:
    """The final output (or why there is none)."""
    if outcome.output is not None:
        click.echo("")
        click.echo("━━ output " + "━" * 50)
        for line in output_lines(outcome.output):
            click.echo(line)
        for artifact in outcome.output.artifacts:
            click.echo(f"artifact: {artifact.delegate} ({artifact.process_id})")
        return
    click.echo(f"\n✗ {outcome.status}: {outcome.error}")


__all__ = ["Follower", "Outcome", "print_outcome"]

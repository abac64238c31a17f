"""Follow a running Interaction tree live by polling its snapshot, and print what happens.

Shown as it appears: the text a model streams while it answers (when its adapter
streams), each model response (what it decided), each child started, each settled result
with its disposition, steers and validator feedback, background tasks (launched, each new
progress headline, how they ended), tool input requests (answered at the terminal when an
answerer is given), unknown effects with the exact `resolve` command, and finally the
output or the failure.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

import click
from temporalio.client import WorkflowExecutionStatus, WorkflowQueryFailedError
from temporalio.service import RPCError, RPCStatusCode

from scope_temporal.cli._answers import Answerer
from scope_temporal.cli._render import (
    INDENT,
    answer_command,
    attempt_line,
    call_label,
    call_of,
    child_position,
    depth,
    model_line,
    output_lines,
    resolve_command,
    result_line,
    retry_command,
    shorten,
    task_line,
    unknown_label,
)
from scope_temporal.client import InteractionHandle
from scope_temporal.errors import InteractionCanceled, InteractionFailed, NoSuchWait, ScopeError
from scope_temporal.interaction.snapshot import (
    PendingToolInput,
    ProcessSnapshot,
    TaskSnapshot,
    TreeSnapshot,
)
from scope_temporal.outputs import Output

_CLOSED = {
    WorkflowExecutionStatus.COMPLETED,
    WorkflowExecutionStatus.FAILED,
    WorkflowExecutionStatus.CANCELED,
    WorkflowExecutionStatus.TERMINATED,
    WorkflowExecutionStatus.TIMED_OUT,
}


@dataclass
class Outcome:
    """How following ended."""

    status: str
    output: Output | None = None
    error: str | None = None


@dataclass
class _Seen:
    messages: dict[str, int] = field(default_factory=dict)
    children: set[str] = field(default_factory=set)
    results: set[str] = field(default_factory=set)
    waits: set[str] = field(default_factory=set)
    unknowns: set[str] = field(default_factory=set)
    attempts: set[str] = field(default_factory=set)
    tasks: dict[str, tuple[str, int]] = field(default_factory=dict)
    """Task id -> (status, progress events) last shown."""


class Follower:
    """Print the progress of one Interaction until it ends.

    Args:
        handle: the Interaction.
        answer: answers tool input waits (e.g. at the terminal); None prints how to answer.
        poll: seconds between snapshots.
        stop_unanswered: end (status `waiting`) when the answerer leaves a wait open,
            instead of following on until someone answers it.
        command_args: connection options appended to the commands it prints.
    """

    def __init__(
        self,
        handle: InteractionHandle,
        *,
        answer: Answerer | None = None,
        poll: float = 0.25,
        stop_unanswered: bool = False,
        command_args: Sequence[str] = (),
    ) -> None:
        self.handle = handle
        self.answer = answer
        self.poll = poll
        self.stop_unanswered = stop_unanswered
        self.command_args = tuple(command_args)
        self._unanswered: str | None = None
        self._seen = _Seen()
        self._names: dict[str, str] = {}
        self._streamed: dict[tuple[str, int], int] = {}  # characters printed per model call
        self._open_stream: tuple[str, int] | None = None  # the line streamed text goes on

    async def follow(self) -> Outcome:
        while True:
            tree = await self._snapshot()
            if tree is None:
                ended = await self._ended()
                if ended is not None:
                    return ended
            else:
                for process in tree.processes:
                    if process.kind == "interaction":
                        self._progress(tree, process)
                        if process.status == "running":
                            await self._stream(process.process_id)
                self._tasks(tree.tasks)
                self._unknowns(tree)
                await self._waits(tree)
                if self._unanswered is not None and self.stop_unanswered:
                    return Outcome("waiting", error=self._unanswered)
                if tree.root.status in ("completed", "failed", "canceled"):
                    return await self._finish(tree)
            await asyncio.sleep(self.poll)

    def _unknowns(self, tree: TreeSnapshot) -> None:
        for process in tree.processes:
            for unknown in process.unknown_effects:
                if unknown.effect_id in self._seen.unknowns:
                    continue
                self._seen.unknowns.add(unknown.effect_id)
                command = resolve_command(self.handle.id, unknown, self.command_args)
                lines = [
                    f"! outcome unknown: {unknown_label(unknown)}",
                    f"{INDENT}why: {shorten(unknown.diagnostic, 110)}",
                    f"{INDENT}nothing is retried by itself; investigate, then settle it with:",
                    f"{INDENT}{command}",
                ]
                if unknown.kind == "model":
                    retry = retry_command(self.handle.id, unknown, self.command_args)
                    lines += [f"{INDENT}or send the request again (a new call):", INDENT + retry]
                self._say(process.process_id, lines)
            for attempt in process.model_attempts:
                if attempt.effect_id not in self._seen.attempts:
                    self._seen.attempts.add(attempt.effect_id)
                    self._say(process.process_id, [attempt_line(attempt)])

    async def _snapshot(self) -> TreeSnapshot | None:
        try:
            return await asyncio.wait_for(self.handle.snapshot(), 15)
        except (ScopeError, WorkflowQueryFailedError, TimeoutError):
            return None  # not started yet, or closed without a queryable state
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                raise click.ClickException(f"no interaction {self.handle.id!r}") from None
            return None

    async def _ended(self) -> Outcome | None:
        try:
            status = await self.handle.status()
        except RPCError:
            return None
        if status not in _CLOSED:
            return None
        return await self._result()

    async def _result(self) -> Outcome:
        try:
            output = await self.handle.result()
        except InteractionCanceled as error:
            return Outcome("canceled", error=str(error))
        except InteractionFailed as error:
            return Outcome("failed", error=str(error))
        return Outcome("completed", output=output)

    def _tasks(self, tasks: list[TaskSnapshot]) -> None:
        """A line when a task starts, when its progress headline moves, and when it ends."""
        for task in tasks:
            shown = self._seen.tasks.get(task.task_id)
            now = (task.status, task.progress.events)
            if shown == now:
                continue
            if shown is None:
                self._say(task.task_id, [f"{INDENT}⇢ {task.tool} continues in the background"])
            self._seen.tasks[task.task_id] = now
            self._say(task.task_id, [INDENT + task_line(task)])

    async def _finish(self, tree: TreeSnapshot) -> Outcome:
        root = tree.root
        for task in tree.tasks:
            if not task.ended:
                self._say(
                    task.task_id,
                    [
                        f"{INDENT}(task {task.task_id} goes on in the background; look at it "
                        f"with: scope-temporal inspect {self.handle.id})"
                    ],
                )
        if root.status == "completed" and root.output is not None:
            return Outcome("completed", output=root.output)
        if root.status == "failed" and root.failure is not None:
            spent = f" ({tree.usage} used)" if tree.usage.models else ""
            return Outcome("failed", error=f"[{root.failure.code}] {root.failure.message}{spent}")
        return await self._result()

    def _say(self, process_id: str, lines: list[str]) -> None:
        level = depth(process_id)
        prefix = INDENT * level + (f"[{self._definition(process_id)}] " if level else "")
        for line in lines:
            self._echo(prefix + line)

    def _echo(self, line: str) -> None:
        self._end_stream_line()
        click.echo(line)

    def _end_stream_line(self) -> None:
        if self._open_stream is not None:
            click.echo("")
            self._open_stream = None

    async def _stream(self, process_id: str) -> None:
        """Print what the model call in flight streamed since the last look."""
        try:
            live = await self.handle.live_text(process_id)
        except RPCError:
            return
        if live is None:
            return
        key = (process_id, live.model_call_seq)
        printed = self._streamed.get(key, 0)
        new = live.text[printed:].replace("\n", " ")
        if not new:
            return
        if self._open_stream != key:
            self._end_stream_line()
            level = depth(process_id)
            prefix = INDENT * level + (f"[{self._definition(process_id)}] " if level else "")
            click.echo(f"{prefix}model #{live.model_call_seq} ▸ ", nl=False)
        click.echo(new, nl=False)
        self._open_stream = key
        self._streamed[key] = len(live.text)

    def _definition(self, process_id: str) -> str:
        """The Definition of the Interaction owning `process_id` (itself or its tool call)."""
        owner = re.sub(r"/(tool|task)/\d+/\d+$", "", process_id)
        return self._names.get(owner, "delegate")

    def _progress(self, tree: TreeSnapshot, process: ProcessSnapshot) -> None:
        """Print what is new in one Interaction, in order: each model response, then the
        calls it started and their results, then any steer or validator feedback."""
        pid = process.process_id
        self._names[pid] = process.definition
        context = process.context
        start = min(self._seen.messages.get(pid, 0), len(context))  # a reducer may shorten it
        rounds = {r.model_call_seq: r for r in process.settled_results}
        delegates = {a.ref for a in process.artifacts} | {d.ref for d in process.active_delegates}
        children: dict[int, list[str]] = {}
        for child_id in process.active_children:
            position = child_position(child_id)
            children.setdefault(position[1] if position else 0, []).append(child_id)
        seq = 0
        for index, message in enumerate(context):
            previous = context[index - 1] if index else None
            if message.role == "assistant":
                seq += 1
                if index >= start:
                    self._say(pid, [model_line(seq, message)])
                self._children(tree, pid, children.get(seq, []))
                settled = rounds.get(seq)
                for entry in settled.entries if settled else ():
                    if entry.call_ref not in self._seen.results:
                        self._seen.results.add(entry.call_ref)
                        delegate = entry.call_ref in delegates
                        self._say(pid, [INDENT + result_line(entry, delegate=delegate)])
            elif (
                index >= start
                and message.role == "user"
                and previous is not None
                and previous.role != "system"
            ):
                after_reply = previous.role == "assistant" and not previous.tool_calls
                kind = "completion validator sent the reply back" if after_reply else "steer"
                self._say(pid, [f"✎ {kind}: {shorten(message.text, 100)}"])
        self._children(tree, pid, children.get(0, []))
        self._seen.messages[pid] = len(context)

    def _children(self, tree: TreeSnapshot, pid: str, child_ids: list[str]) -> None:
        for child_id in child_ids:
            if child_id in self._seen.children:
                continue
            self._seen.children.add(child_id)
            position = child_position(child_id)
            call = call_of(tree, child_id)
            what = call_label(call, 24) if call else child_id
            self._say(pid, [f"{INDENT}▶ {position[0] if position else 'child'} {what} started"])

    async def _waits(self, tree: TreeSnapshot) -> None:
        for wait in tree.pending_tool_inputs:
            if wait.wait_id in self._seen.waits:
                continue
            self._seen.waits.add(wait.wait_id)
            call = call_of(tree, wait.process_id)
            task = next((t for t in tree.tasks if t.task_id == wait.process_id), None)
            name = call.name if call else task.tool if task else wait.process_id
            if self.answer is None:
                self._say(
                    wait.process_id,
                    [
                        f"? {name} {_asks(wait)}: {wait.prompt_text}",
                        f"{INDENT}answer it with: "
                        f"{answer_command(self.handle.id, wait, self.command_args)}",
                    ],
                )
                continue
            self._end_stream_line()
            value = await self.answer(wait, name)
            if value is None:
                self._unanswered = (
                    f"{name} is waiting for input; answer it with: "
                    f"{answer_command(self.handle.id, wait, self.command_args)}"
                )
                self._echo(f"{INDENT}left open; {self._unanswered}")
                continue
            try:
                await self.handle.answer(wait, f"cli-{uuid.uuid4().hex[:8]}", value)
            except NoSuchWait:
                self._echo(f"{INDENT}(already answered elsewhere)")
            except ScopeError as error:
                self._echo(f"{INDENT}✗ refused: {error}")
                self._seen.waits.discard(wait.wait_id)  # ask again
            else:
                self._echo(f"{INDENT}→ answer sent")


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

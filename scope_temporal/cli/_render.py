"""Text for people: calls, results, waits, unknown effects and the whole snapshot tree."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from typing import Any

from scope_temporal.chat import Message, ToolCall
from scope_temporal.interaction.attention import NEEDS_A_PERSON
from scope_temporal.interaction.snapshot import (
    ModelAttempt,
    PendingToolInput,
    ProcessSnapshot,
    ResultEntry,
    TaskSnapshot,
    TreeSnapshot,
    UnknownEffect,
)
from scope_temporal.outputs import Output, TokenUsage

_CHILD = re.compile(r"/(tool|delegate)/(\d+)/(\d+)$")
MARKS = {"succeeded": "✓", "failed": "✗", "rejected": "⊘", "completed": "✓", "canceled": "⊘"}
INDENT = "  "


def shorten(text: str, limit: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def call_label(call: ToolCall, limit: int = 36) -> str:
    """`search_logs(query="ERROR")`; raw text when the arguments are not a JSON object."""
    try:
        arguments = json.loads(call.arguments or "{}")
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict):
        return f"{call.name}({shorten(call.arguments, limit)})"
    shown = ", ".join(
        f"{key}={shorten(json.dumps(value, ensure_ascii=False), limit)}"
        for key, value in arguments.items()
    )
    return f"{call.name}({shown})"


def child_position(process_id: str) -> tuple[str, int, int] | None:
    """`("tool" | "delegate", model call seq, call index)` of a child process id."""
    match = _CHILD.search(process_id)
    if match is None:
        return None
    return match.group(1), int(match.group(2)), int(match.group(3))


def responses(process: ProcessSnapshot) -> list[Message]:
    """The process's model responses in order (response k answered model call k)."""
    return [m for m in process.context if m.role == "assistant"]


def call_of(tree: TreeSnapshot, process_id: str) -> ToolCall | None:
    """The call a child process (tool call or delegate) runs, from its parent's context."""
    match = _CHILD.search(process_id)
    if match is None:
        return None
    parent_id = process_id[: match.start()]
    try:
        parent = tree.process(parent_id)
    except KeyError:
        return None
    seq, index = int(match.group(2)), int(match.group(3))
    answers = responses(parent)
    if seq > len(answers) or index >= len(answers[seq - 1].tool_calls):
        return None
    return answers[seq - 1].tool_calls[index]


def depth(process_id: str) -> int:
    return process_id.count("/delegate/")


def model_line(seq: int, message: Message) -> str:
    """What a model response decided: calls, or a reply."""
    if message.tool_calls:
        return f"model #{seq} → " + ", ".join(call_label(c, 24) for c in message.tool_calls)
    first = message.text.strip().splitlines()[0] if message.text.strip() else ""
    return f"model #{seq} → reply: {shorten(first, 60)}"


def result_line(entry: ResultEntry, *, delegate: bool = False) -> str:
    mark = MARKS.get(entry.disposition, "·")
    detail = entry.for_user if isinstance(entry.for_user, str) else None
    if detail is None:
        lines = entry.result.content.strip().splitlines()
        detail = lines[0] if lines else ""
    what = call_label(entry.call, 24)
    if delegate:
        what += " (delegate)"
    decided = ""
    if entry.approval is not None:
        verb = "approved" if entry.approval.decision == "approve" else "denied"
        decided = f" · {verb} by {entry.approval.by}"
    return f"{mark} {what} {entry.disposition}{decided} · {shorten(detail, 60)}"


def schema_hint(schema: dict[str, Any]) -> str:
    """`{"approved": boolean, "note": string} (required: approved)` for object schemas."""
    properties = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(properties, dict):
        return json.dumps(schema)
    fields = ", ".join(f'"{key}": {_type_name(value)}' for key, value in properties.items())
    required = schema.get("required") or []
    return "{" + fields + "}" + (f" (required: {', '.join(required)})" if required else "")


def _type_name(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    kind = schema.get("type", "any")
    return " | ".join(kind) if isinstance(kind, list) else str(kind)


def example_answer(schema: dict[str, Any]) -> str:
    """A JSON value with the schema's shape, to show what an answer looks like."""
    return json.dumps(_example(schema), ensure_ascii=False)


def _example(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return None
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    if kind == "object":
        return {k: _example(v) for k, v in (schema.get("properties") or {}).items()}
    return {"boolean": True, "string": "...", "integer": 1, "number": 1, "array": []}.get(str(kind))


def answer_command(root_id: str, wait: PendingToolInput, extra: Sequence[str] = ()) -> str:
    """The command that answers a wait, with an example answer of the schema's shape
    (`y` for an approval wait: `n REASON` denies it)."""
    example = "y" if wait.kind == "approval" else example_answer(wait.response_schema)
    return shlex.join(["scope-temporal", "answer", root_id, wait.wait_id, example, *extra])


def resolve_command(root_id: str, unknown: UnknownEffect, extra: Sequence[str] = ()) -> str:
    """The command that settles an unknown effect, with a placeholder result.

    Args:
        extra: connection options to append (e.g. `--address host:port`).
    """
    if unknown.kind == "tool":
        placeholder = ["--result", "what you established", "--disposition", "succeeded"]
    else:
        placeholder = ["--result", "the reply the model gave"]
    return shlex.join(
        ["scope-temporal", "resolve", root_id, unknown.effect_id, *placeholder, *extra]
    )


def retry_command(root_id: str, unknown: UnknownEffect, extra: Sequence[str] = ()) -> str:
    """The command that sends an unknown model call again (a new Effect)."""
    return shlex.join(["scope-temporal", "resolve", root_id, unknown.effect_id, "--retry", *extra])


def attempt_line(attempt: ModelAttempt) -> str:
    """`↻ model #1 (default) not called: 429 Rate limit reached → local-1/model/1/retry/1`."""
    if attempt.outcome == "not_called":
        status = f"{attempt.status} " if attempt.status is not None else ""
        what = f"not called: {status}{shorten(attempt.message, 60)}"
    else:
        who = "the host" if attempt.resent_by == "host" else "model_retry(ambiguous=...)"
        what = f"unknown ({shorten(attempt.message, 50)}), superseded: sent again by {who}"
    then = f" → {attempt.followed_by}" if attempt.followed_by else " → gave up"
    return f"↻ model #{attempt.model_call_seq} ({attempt.model}) {what}{then}"


def usage_text(usage: TokenUsage) -> str:
    """`, 1,234 tokens (1,000 in, 234 out)`, or nothing when no call reported usage."""
    return f", {usage}" if usage.models else ""


def unknown_label(unknown: UnknownEffect) -> str:
    request = unknown.request
    if request.kind == "tool":
        return f"tool {call_label(request.call, 24)}"
    return f"model call #{request.model_call_seq} of {request.definition}"


def task_line(task: TaskSnapshot) -> str:
    """`⋯ export_logs running · task ops-1/task/1/2 · attempt 1 · 3 progress event(s): …`"""
    mark = MARKS.get(task.status, "⋯")
    line = f"{mark} {task.tool} {task.status.replace('_', ' ')} · task {task.task_id}"
    if task.description:
        line += f" · {shorten(task.description, 60)}"
    line += f" · attempt {task.attempt}"
    if task.progress.events:
        line += f" · {task.progress.events} progress event(s)"
        if task.progress.last_message:
            line += f": {shorten(task.progress.last_message, 50)}"
    if task.status == "completed" and task.data is not None:
        line += f" · {shorten(json.dumps(task.data, ensure_ascii=False), 60)}"
    if task.error:
        line += f" · {shorten(task.error, 80)}"
    return line


def output_lines(output: Output) -> list[str]:
    lines = output.text.strip().splitlines() or ["(empty reply)"]
    lines.append(
        f"({output.source.replace('_', ' ')}, {output.model_calls} model call(s)"
        + usage_text(output.usage)
        + (f", {len(output.artifacts)} artifact(s))" if output.artifacts else ")")
    )
    return lines


# --- the whole tree ----------------------------------------------------------------------


def render_tree(tree: TreeSnapshot, extra: Sequence[str] = ()) -> list[str]:
    """The snapshot as an indented tree: each model call, its calls and their results,
    what is running or waiting, unknown effects (with the command to resolve them), output.

    Args:
        extra: connection options appended to the commands shown.
    """
    root = tree.root
    # a person is needed: say for what, in the words of the ScopeStatus search attribute
    needs = tree.scope_status
    status = needs if needs in NEEDS_A_PERSON else tree.status
    head = (
        f"{root.process_id} · {root.definition} · {status} · {root.model_calls} model call(s)"
        + (f" · {tree.usage}" if tree.usage.models else "")
    )
    text = _TreeText(tree, tuple(extra))
    lines = [head, *text.process(root, 1)]
    if tree.tasks:
        lines.append(f"{INDENT}background tasks:")
        for task in tree.tasks:
            lines.append(INDENT * 2 + task_line(task))
            if task.question is not None:
                lines += text.wait(task.question, INDENT * 3)
    return lines


class _TreeText:
    """Renders one tree; commands it shows address the root Interaction."""

    def __init__(self, tree: TreeSnapshot, extra: tuple[str, ...]) -> None:
        self.tree = tree
        self.root_id = tree.root.process_id
        self.extra = extra

    def process(self, process: ProcessSnapshot, level: int) -> list[str]:
        pad = INDENT * level
        lines: list[str] = []
        rounds = {r.model_call_seq: r for r in process.settled_results}
        delegates = {a.ref for a in process.artifacts} | {d.ref for d in process.active_delegates}
        active = {child_position(c): c for c in process.active_children}
        attempts: dict[int, list[str]] = {}
        for attempt in process.model_attempts:
            attempts.setdefault(attempt.model_call_seq, []).append(pad + attempt_line(attempt))
        seq = 0
        previous: Message | None = None
        for message in process.context:
            if message.role == "user":
                lines.append(pad + _user_line(message, previous))
            elif message.role == "assistant":
                seq += 1
                lines += attempts.pop(seq, [])
                lines.append(pad + model_line(seq, message))
                settled = rounds.get(seq)
                for entry in settled.entries if settled else ():
                    line = result_line(entry, delegate=entry.call_ref in delegates)
                    lines.append(pad + INDENT + line)
                for index, call in enumerate(message.tool_calls):
                    for kind in ("tool", "delegate"):
                        child_id = active.get((kind, seq, index))
                        if child_id is not None:
                            lines += self.child(child_id, call, level + 1)
            if message.role != "tool":
                previous = message
        lines += [line for later in attempts.values() for line in later]  # the call in flight
        for unknown in process.unknown_effects:
            lines += self.unknown(unknown, pad)
        if process.failure is not None:
            lines.append(f"{pad}✗ failed [{process.failure.code}]: {process.failure.message}")
        if process.output is not None and process.process_id == self.root_id:
            lines.append(f"{pad}output:")
            lines += [pad + INDENT + line for line in output_lines(process.output)]
        return lines

    def child(self, child_id: str, call: ToolCall, level: int) -> list[str]:
        pad = INDENT * level
        try:
            child = self.tree.process(child_id)
        except KeyError:
            return [f"{pad}… {call.name} running ({child_id})"]
        if child.kind == "interaction":
            head = (
                f"{pad}… {call.name} → delegate {child.definition} {child.status} "
                f"({child_id}), {child.model_calls} model call(s)"
            )
            return [head, *self.process(child, level + 1)]
        lines = [
            f"{pad}… {call_label(call, 24)} {child.status} ({child_id}), "
            f"entered {child.tool_entries} time(s)"
        ]
        for wait in child.pending_tool_inputs:
            lines += self.wait(wait, pad + INDENT)
        for unknown in child.unknown_effects:
            lines += self.unknown(unknown, pad + INDENT)
        return lines

    def wait(self, wait: PendingToolInput, pad: str) -> list[str]:
        kind = "approval wait" if wait.kind == "approval" else "input wait"
        return [
            f"{pad}? {kind} {wait.wait_id}: {shorten(wait.prompt_text, 80)}",
            f"{pad}{INDENT}schema: {schema_hint(wait.response_schema)}",
            f"{pad}{INDENT}answer: {answer_command(self.root_id, wait, self.extra)}",
        ]

    def unknown(self, unknown: UnknownEffect, pad: str) -> list[str]:
        command = resolve_command(self.root_id, unknown, self.extra)
        lines = [
            f"{pad}! unknown outcome of {unknown_label(unknown)} (effect {unknown.effect_id})",
            f"{pad}{INDENT}why: {shorten(unknown.diagnostic, 100)}",
            f"{pad}{INDENT}settle it after investigating: {command}",
        ]
        if unknown.kind == "model":
            retry = retry_command(self.root_id, unknown, self.extra)
            lines.append(f"{pad}{INDENT}or send the request again: {retry}")
        return lines


def _user_line(message: Message, previous: Message | None) -> str:
    """The opening prompt, validator feedback (it follows a rejected reply), or a steer."""
    text = shorten(message.text, 90)
    if previous is None or previous.role == "system":
        return f"user: {text}"
    if previous.role == "assistant" and not previous.tool_calls:
        return f"✎ completion validator: {text}"
    return f"✎ steer: {text}"


__all__ = [
    "answer_command",
    "attempt_line",
    "call_label",
    "call_of",
    "child_position",
    "depth",
    "example_answer",
    "model_line",
    "output_lines",
    "render_tree",
    "resolve_command",
    "result_line",
    "retry_command",
    "schema_hint",
    "shorten",
    "task_line",
    "unknown_label",
    "usage_text",
]

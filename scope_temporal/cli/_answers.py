"""Answering a tool's input request at the terminal, validated against its schema.

Reading stdin never blocks the event loop (a worker may run in the same process and must
keep heartbeating): lines are read from the file descriptor when it is readable.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import click

from scope_temporal.cli._render import example_answer, schema_hint, shorten
from scope_temporal.interaction.approvals import ANSWER_SCHEMA, MAX_REASON_CHARS
from scope_temporal.interaction.snapshot import PendingToolInput
from scope_temporal.tools.validation import validate_value

Answerer = Callable[[PendingToolInput, str], Awaitable[Any | None]]
"""Given a wait and the tool's name, return the answer (None: leave the wait open)."""

_YES = {"y", "yes"}
_NO = {"n", "no"}
_ALWAYS = {"a", "always"}


def is_approval_wait(schema: dict[str, Any]) -> bool:
    """The schema of an approval wait (`ApprovalPolicy`): `{"decision": ...}`."""
    return schema == ANSWER_SCHEMA


def approval_answer(text: str) -> dict[str, Any] | None:
    """An approval wait's answer typed as a letter and an optional reason: `y [reason]`
    approves once, `a [reason]` approves this tool for the session, `n [reason]` denies;
    None for anything else."""
    word, _, reason = text.strip().partition(" ")
    word, reason = word.lower(), reason.strip()
    if word in _YES:
        return {"decision": "approve", "reason": reason}
    if word in _ALWAYS:
        return {"decision": "approve", "reason": reason, "remember": True}
    if word in _NO:
        return {"decision": "deny", "reason": reason}
    return None


def is_approval(schema: dict[str, Any]) -> bool:
    """An object schema with a boolean `approved` and nothing else required."""
    properties = schema.get("properties") or {}
    approved = properties.get("approved") if isinstance(properties, dict) else None
    required = set(schema.get("required") or ())
    return (
        schema.get("type") == "object"
        and isinstance(approved, dict)
        and approved.get("type") == "boolean"
        and required <= {"approved"}
    )


def parse_answer(text: str, schema: dict[str, Any]) -> tuple[Any, str | None]:
    """The answer typed at the terminal, or the reason it is refused.

    JSON matching the schema; for approval schemas also `y`/`yes` and `n`/`no`; for an
    approval wait also `y`, `a` or `n`, each with an optional reason (`approval_answer`).

    Returns:
        `(value, None)`, or `(None, problem)` with the schema validator's message.
    """
    text = text.strip()
    value: Any = approval_answer(text) if is_approval_wait(schema) else None
    if value is None and is_approval(schema) and text.lower() in _YES | _NO:
        approved = text.lower() in _YES
        value = {"approved": approved}
        if "note" in (schema.get("properties") or {}):
            value["note"] = "approved at the terminal" if approved else "declined at the terminal"
        return value, None
    if value is None:
        try:
            value = json.loads(text)
        except ValueError as error:
            return None, f"not JSON ({error})"
    problem = validate_value(schema, value)
    if problem is not None:
        return None, f"does not match the schema: {problem}"
    return value, None


class Terminal:
    """Asks at the terminal; `auto_approve` answers approval requests with yes."""

    def __init__(self, *, auto_approve: bool = False) -> None:
        self.auto_approve = auto_approve
        self._buffer = b""
        self._eof = False

    async def __call__(self, wait: PendingToolInput, tool_name: str) -> Any | None:
        schema = wait.response_schema
        if wait.kind == "approval" and is_approval_wait(schema):
            return await self.approve(wait, tool_name)
        click.echo(f"? {tool_name} asks: {wait.prompt_text}")
        if self.auto_approve and is_approval(schema):
            answer: dict[str, Any] = {"approved": True}
            if "note" in (schema.get("properties") or {}):
                answer["note"] = "auto-approved by --yes"
            click.echo(f"  answered {json.dumps(answer)} (--yes)")
            return answer
        click.echo(f"  answer with JSON matching {schema_hint(schema)}")
        hint = f"  e.g. {example_answer(schema)}"
        if is_approval(schema):
            hint += "   (or just y / n)"
        click.echo(hint)
        return await self._ask("answer> ", schema, "try again")

    async def approve(self, wait: PendingToolInput, tool_name: str) -> dict[str, Any] | None:
        """Ask y/n (with an optional reason) for a call waiting for approval."""
        click.echo(f"? {tool_name} needs approval: {wait.prompt_text}")
        if self.auto_approve:
            click.echo("  approved (--yes)")
            return {"decision": "approve", "reason": "approved with --yes"}
        click.echo(
            "  y: approve once · a: approve this tool for the session · n: deny "
            "(a reason may follow the letter)"
        )
        value = await self._ask("approve? [y/a/n]> ", wait.response_schema, "answer y, a or n")
        if isinstance(value, dict) and value["decision"] == "deny" and not value.get("reason"):
            click.echo("reason (optional, Enter to skip)> ", nl=False)
            sys.stdout.flush()
            value["reason"] = (await self.readline() or "").strip()[:MAX_REASON_CHARS]
        return value

    async def _ask(self, prompt: str, schema: dict[str, Any], retry: str) -> Any | None:
        """Ask until a line parses into an answer matching `schema` (None: no input)."""
        while True:
            click.echo(prompt, nl=False)
            sys.stdout.flush()
            line = await self.readline()
            if line is None:
                click.echo("\n  (no terminal input; the wait stays open)")
                return None
            value, problem = parse_answer(line, schema)
            if problem is None:
                return value
            click.echo(f"  ✗ {shorten(problem, 200)} — {retry}")

    async def readline(self) -> str | None:
        """The next line of stdin, without blocking the event loop; None at end of input."""
        while b"\n" not in self._buffer and not self._eof:
            chunk = await _read_chunk()
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True
        if not self._buffer and self._eof:
            return None
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode(errors="replace")


async def _read_chunk() -> bytes:
    loop = asyncio.get_running_loop()
    fd = sys.stdin.fileno()
    ready: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        if not ready.done():
            ready.set_result(None)

    try:
        loop.add_reader(fd, readable)
    except (NotImplementedError, PermissionError, ValueError, OSError):
        return await asyncio.to_thread(os.read, fd, 4096)  # e.g. a regular file as stdin
    try:
        await ready
    finally:
        loop.remove_reader(fd)
    return os.read(fd, 4096)


__all__ = [
    "Answerer",
    "Terminal",
    "approval_answer",
    "is_approval",
    "is_approval_wait",
    "parse_answer",
]

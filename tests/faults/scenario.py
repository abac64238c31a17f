"""The fault-injection scenario: an agent whose every side effect is a line in a ledger.

The root agent `faults` reads an inventory, writes two items and notifies a channel
(round 1, two calls at a time) and starts an export (a managed background tool, below),
then has a delegate (`faults-helper`, which writes a
note) summarise while an exec tool asks the host for approval and deploys (round 2),
then replies. The planner is a function of the request, so any worker (or the host)
gives the same answer to the same request; it re-issues a call whose result says it was
not done, so the run converges on the same output whatever was interrupted.

Ledger (JSON lines, appended with O_APPEND and fsync by every process):
    {"ev": "model_start",  "effect": E}            a model call began (worker)
    {"ev": "model_answer", "effect": E, "by": ..., "response": {...}}
    {"ev": "tool_enter",   "effect": E, "entry": N, "tool": T}
    {"ev": "effect",       "effect": E, "key": K}  THE side effect of a tool call
    {"ev": "kill",         "point": P}             a kill point fired (then SIGKILL)

Kill points: `maybe_kill(site, tag)` SIGKILLs this process the first time
`f"{site}:{tag}"` equals the point the worker was started with (`KILL_AT`). Tags name
what is interrupted: tools `<tool>=<first argument>#<entry>`, models `<root|helper>#<seq>`.
To add a tool kind to the scenario, add it to a round of `ROOT_PLAN` with its key and give
it `before`/`after` kill points like the tools below.

The background tool `export` (recoverable, resumable, handoff) prepares for a second (its
call moves to the background after 0.3 s: the task's first attempt adopts the live run),
asks the host whether to export (the task waits for input), then writes once. Its kill
points (tags `export=<dataset>`, no attempt number: the first time in that process):
`task.foreground` (the run, while the call still observes it in the foreground),
`task.adopt` (the handoff), `task.before` / `task.after` (a background attempt around its
side effect), `task.recover` (a recovery). Like a real export service, the write is
idempotent per task id: a recovered run asks the ledger (the external system) whether
this task's write happened and never writes twice. The planner follows the task with
`task_output` (or a lifecycle notification) and starts a new export only when the
task failed or the call's outcome was settled as "not done".
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from temporalio import activity

from scope_temporal import (
    Definition,
    Delegate,
    HostFailure,
    Message,
    ModelRequest,
    Response,
    RunHandle,
    RunOutcome,
    RunProgress,
    TaskRun,
    ToolFailure,
    ToolInvocation,
    background_tool,
    current_tool_call,
    reply,
    require_tool_input,
    tool,
    tool_input_continuation,
)

LEDGER = [Path("/dev/null")]
"""Set by the worker process (and the host) to this run's ledger file."""
KILL_AT = [""]
MODEL_SECONDS_VAR = "SCOPE_FAULTS_MODEL_SECONDS"
"""How long each model call of a worker process takes (see `host.WorkerProcess`)."""
"""The kill point armed in this process ("" = none)."""
SECRET = "sk-scope-test-SECRET-7f3a9c"
"""A fake API key every scenario worker holds; no history may ever contain it."""

APPROVAL: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}},
    "required": ["approved"],
}
PROMPT = "ship it"
STEER_TEXT = "STEER: double-check the inventory"
HELPER_TASK = "summarize the changes"
SUMMARY = "summary ok"


@dataclass(frozen=True)
class Planned:
    """One call the root wants done, and the result content that proves it was."""

    name: str
    arguments: dict[str, str]
    done: str


ROOT_PLAN: tuple[tuple[Planned, ...], ...] = (
    (
        Planned("inventory", {"item": "prod"}, "read:prod"),
        Planned("write_item", {"name": "a"}, "write:a"),
        Planned("write_item", {"name": "b"}, "write:b"),
        Planned("notify", {"channel": "ops"}, "notify:ops"),
        Planned("export", {"dataset": "sales"}, "export:sales"),
    ),
    (
        Planned("summarize", {"task": HELPER_TASK}, SUMMARY),
        Planned("deploy", {"target": "prod"}, "deploy:prod"),
    ),
)
EXPECTED_KEYS = frozenset(
    {
        "read:prod",
        "write:a",
        "write:b",
        "notify:ops",
        "export:sales",
        "note:changes",
        "deploy:prod",
    }
)
"""Every side effect a completed run must show in the ledger, each exactly once."""
EXPECTED_OUTPUT = (
    "done: read:prod, write:a, write:b, notify:ops, export:sales, summary ok, deploy:prod (steered)"
)


# --- ledger and kill points ------------------------------------------------------------


def append(entry: dict[str, Any], ledger: Path | None = None) -> None:
    line = (json.dumps(entry, sort_keys=True) + "\n").encode()
    fd = os.open(ledger or LEDGER[0], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def read_ledger(ledger: Path) -> list[dict[str, Any]]:
    if not ledger.exists():
        return []
    return [json.loads(line) for line in ledger.read_text().splitlines() if line.strip()]


def maybe_kill(site: str, tag: str, effect: str | None = None) -> None:
    """SIGKILL this process if `site:tag` is the armed kill point (logged first, with the
    Effect whose activity it interrupts, if any)."""
    point = f"{site}:{tag}"
    if KILL_AT[0] and point == KILL_AT[0]:
        append({"ev": "kill", "point": point, "pid": os.getpid(), "effect": effect})
        os.kill(os.getpid(), signal.SIGKILL)


def call_tag(name: str, arguments: str, entry: int) -> str:
    try:
        values = list(json.loads(arguments or "{}").values())
    except ValueError:
        values = []
    first = values[0] if values else ""
    return f"{name}={first}#{entry}"


def invocation_tag(invocation: ToolInvocation) -> str:
    return call_tag(invocation.call.name, invocation.call.arguments, invocation.attempt)


def model_tag(process_id: str, seq: int) -> str:
    return f"{'helper' if '/delegate/' in process_id else 'root'}#{seq}"


# --- tools -----------------------------------------------------------------------------


def _enter(invocation: ToolInvocation) -> str:
    """Log one entry into a tool body; returns its Effect id."""
    append(
        {
            "ev": "tool_enter",
            "effect": invocation.effect_id,
            "entry": invocation.attempt,
            "tool": invocation.call.name,
            "pid": os.getpid(),
        }
    )
    return invocation.effect_id


def _side_effect(key: str) -> None:
    """The tool's one external action, bracketed by its kill points."""
    invocation = current_tool_call()
    tag = invocation_tag(invocation)
    effect = _enter(invocation)
    maybe_kill("tool.before", tag, effect)
    append({"ev": "effect", "effect": effect, "key": key})
    maybe_kill("tool.after", tag, effect)


@tool(permission="read", execution="parallel")
def inventory(item: str) -> str:
    """Read the stock of an item."""
    _side_effect(f"read:{item}")
    return f"read:{item}"


@tool(permission="write", execution="parallel")
def write_item(name: str) -> str:
    """Write an item."""
    _side_effect(f"write:{name}")
    return f"write:{name}"


@tool(permission="write", execution="parallel")
def notify(channel: str) -> str:
    """Notify a channel; the gateway never confirms, so the outcome is always unknown."""
    _side_effect(f"notify:{channel}")
    raise HostFailure("chat gateway timed out after sending")


@tool(permission="exec")
def deploy(target: str) -> str:
    """Deploy, once a human approved it."""
    invocation = current_tool_call()
    if tool_input_continuation() is None:
        effect = _enter(invocation)
        maybe_kill("tool.ask", invocation_tag(invocation), effect)
        require_tool_input(f"Deploy {target}?", APPROVAL, state={"target": target})
    _state, answer = tool_input_continuation()
    if not answer["approved"]:
        return "deploy refused"
    _side_effect(f"deploy:{target}")
    return f"deploy:{target}"


@tool(permission="write", execution="parallel")
def note(text: str) -> str:
    """Write a note (the helper's one side effect)."""
    _side_effect(f"note:{text}")
    return f"note:{text}"


class ExportArgs(BaseModel):
    dataset: str


PREPARE_SECONDS = 1.0
"""How long an export prepares before it asks (its call moves to the background first)."""


def _export_tag(arguments: ExportArgs) -> str:
    return f"export={arguments.dataset}"


def _written(task_id: str) -> bool:
    """Whether the external system has this task's write (the idempotency check)."""
    return any(e["ev"] == "effect" and e["effect"] == task_id for e in read_ledger(LEDGER[0]))


def _prepare(task_id: str, arguments: ExportArgs, attempt: int) -> TaskRun:
    """Prepare (no side effect), then ask whether to write."""
    effect = current_tool_call().effect_id if attempt == 0 else task_id

    async def work(progress: RunProgress) -> RunOutcome:
        progress.publish("prepare", metadata={"message": f"preparing {arguments.dataset}"})
        for step in range(10):
            await asyncio.sleep(PREPARE_SECONDS / 10)
            if attempt == 0 and step == 1:
                maybe_kill("task.foreground", _export_tag(arguments), effect)
        return RunOutcome.waiting_input(
            f"Export {arguments.dataset}?", APPROVAL, {"phase": "asked"}
        )

    return TaskRun(work, checkpoint={"phase": "preparing"})


def _write(task_id: str, arguments: ExportArgs, attempt: int) -> TaskRun:
    """Write once per task id (a recovered run finds an earlier write and stops there)."""
    key = f"export:{arguments.dataset}"

    async def work(progress: RunProgress) -> str:
        await asyncio.sleep(0.2)  # the first heartbeat carries the checkpoint
        if _written(task_id):
            return key
        append(
            {
                "ev": "tool_enter",
                "effect": task_id,
                "entry": attempt,
                "tool": "export",
                "pid": os.getpid(),
            }
        )
        maybe_kill("task.before", _export_tag(arguments), task_id)
        append({"ev": "effect", "effect": task_id, "key": key})
        progress.checkpoint({"phase": "written"})
        maybe_kill("task.after", _export_tag(arguments), task_id)
        return key

    return TaskRun(work, checkpoint={"phase": "answered"})


@background_tool(
    permission="write", execution="parallel", foreground_timeout=0.3, heartbeat_timeout=2
)
class Export:
    """Export a dataset (it asks before it writes)."""

    async def start(self, task_id: str, arguments: ExportArgs, attempt: int) -> RunHandle:
        return _prepare(task_id, arguments, attempt)

    async def adopt(
        self, task_id: str, arguments: ExportArgs, attempt: int, run: RunHandle
    ) -> RunHandle:
        maybe_kill("task.adopt", _export_tag(arguments), task_id)
        return run

    async def recover(
        self, task_id: str, arguments: ExportArgs, attempt: int, checkpoint: Any
    ) -> RunHandle:
        maybe_kill("task.recover", _export_tag(arguments), task_id)
        phase = checkpoint.get("phase") if isinstance(checkpoint, dict) else None
        if phase in ("answered", "written"):
            return _write(task_id, arguments, attempt)
        return _prepare(task_id, arguments, attempt)

    async def resume(
        self,
        task_id: str,
        arguments: ExportArgs,
        attempt: int,
        request_id: str,
        data: Any,
        checkpoint: Any,
    ) -> RunHandle:
        if not data["approved"]:
            raise ToolFailure("export refused")
        return _write(task_id, arguments, attempt)


export = Export

TOOLS = [inventory, write_item, notify, deploy, note, export]


def _definitions(heartbeat: timedelta | None) -> list[Definition]:
    timeouts: dict[str, Any] = {}
    if heartbeat is not None:
        timeouts = {"model_heartbeat_timeout": heartbeat, "tool_heartbeat_timeout": heartbeat}
    root = Definition(
        "faults",
        tools=[inventory, write_item, notify, deploy, export],
        delegates=[Delegate("summarize", "Summarise the changes", definition="faults-helper")],
        max_model_calls=24,
        max_concurrent_tool_calls=2,
        **timeouts,
    )
    return [root, Definition("faults-helper", tools=[note], max_model_calls=5, **timeouts)]


DEFINITIONS = _definitions(timedelta(seconds=2))
"""A lost worker is noticed 2 s (+1 s sticky) later: quick kill-point runs."""
FLEET_DEFINITIONS = _definitions(None)
"""The default heartbeat timeouts, for many workers sharing two cores: a starved but
living worker must not be taken for lost (its call would become unknown while it runs)."""


def definitions_for(task_queue: str) -> list[Definition]:
    """The scenario's Definitions as served on `task_queue` (workers and replay agree)."""
    return FLEET_DEFINITIONS if task_queue.startswith("fleet-") else DEFINITIONS


# --- the planner (the model) -----------------------------------------------------------


ENDED = ("completed", "failed", "canceled")
TASK_WAIT_SECONDS = 10


def _envelopes(messages: tuple[Message, ...] | list[Message]) -> list[dict[str, Any]]:
    """The background envelopes the model has read: tool results and notifications."""
    texts = [r.content for m in messages if m.role == "tool" for r in m.tool_results]
    texts += [m.text for m in messages if m.role == "user" and m.text]
    found: list[dict[str, Any]] = []
    for text in texts:
        if '"type"' not in text:
            continue
        try:
            envelope = json.loads(text)
        except ValueError:
            continue
        if isinstance(envelope, dict) and envelope.get("tool") == "export":
            found.append(envelope)
    return found


def _export(messages: tuple[Message, ...] | list[Message]) -> tuple[set[str], str | None]:
    """(what the exports finished, the task still running if any)."""
    done: set[str] = set()
    launched: list[str] = []
    ended: set[str] = set()
    for envelope in _envelopes(messages):
        if envelope.get("status") == "completed" and isinstance(envelope.get("data"), str):
            done.add(envelope["data"])
        if envelope["type"] == "launch_result":
            launched.append(envelope["task_id"])
        elif envelope.get("status") in ENDED and envelope.get("task_id"):
            ended.add(envelope["task_id"])
    running = [t for t in launched if t not in ended]
    return done, (running[-1] if running else None)


def _done(messages: tuple[Message, ...] | list[Message]) -> set[str]:
    return {
        r.content for m in messages if m.role == "tool" for r in m.tool_results if not r.is_error
    }


def plan(messages: tuple[Message, ...] | list[Message]) -> Response:
    """The answer to a request: a pure function of its messages."""
    first_user = next(m.text for m in messages if m.role == "user")
    done = _done(messages)
    if first_user == HELPER_TASK:
        if "note:changes" not in done:
            return reply.tool_calls(("note", {"text": "changes"}))
        return reply.text(SUMMARY)
    exported, running = _export(messages)
    done |= exported
    for round_ in ROOT_PLAN:
        missing = [p for p in round_ if p.done not in done and not (p.name == "export" and running)]
        if missing:
            return reply.tool_calls(*[(p.name, p.arguments) for p in missing])
    if running is not None:
        return reply.tool_calls(
            ("task_output", {"task_id": running, "wait_seconds": TASK_WAIT_SECONDS})
        )
    steered = any(m.role == "user" and m.text == STEER_TEXT for m in messages)
    keys = ", ".join(p.done for round_ in ROOT_PLAN for p in round_)
    return reply.text(f"done: {keys}{' (steered)' if steered else ''}")


class LedgerModel:
    """The scenario's model: logs each call and answer, with kill points around answering.

    Holds `api_key` like a real provider client would; it must never reach history.
    """

    def __init__(self, api_key: str = SECRET) -> None:
        self.api_key = api_key

    async def complete(self, request: ModelRequest) -> Response:
        process_id = activity.info().workflow_id or ""
        effect = f"{process_id}/model/{request.model_call_seq}"
        tag = model_tag(process_id, request.model_call_seq)
        append({"ev": "model_start", "effect": effect, "pid": os.getpid()})
        maybe_kill("model.before", tag, effect)
        await asyncio.sleep(float(os.environ.get(MODEL_SECONDS_VAR) or 0))
        response = plan(request.messages)
        append(
            {
                "ev": "model_answer",
                "effect": effect,
                "by": "worker",
                "response": response.model_dump(mode="json"),
            }
        )
        maybe_kill("model.after", tag, effect)
        return response


# --- observer and middleware with kill points ------------------------------------------


class KillingObserver:
    """Observer callbacks that are kill points (`observer.<event>:<tag>`)."""

    def model_started(self, request: Any) -> None:
        tag = model_tag(request.process_id, request.model_call_seq)
        maybe_kill("observer.model_started", tag, request.effect_id)

    def model_settled(self, request: Any, outcome: Any) -> None:
        tag = model_tag(request.process_id, request.model_call_seq)
        maybe_kill("observer.model_settled", tag, request.effect_id)

    def tool_started(self, invocation: ToolInvocation) -> None:
        maybe_kill("observer.tool_started", invocation_tag(invocation), invocation.effect_id)

    def tool_settled(self, invocation: ToolInvocation, outcome: Any) -> None:
        maybe_kill("observer.tool_settled", invocation_tag(invocation), invocation.effect_id)


async def killing_middleware(
    invocation: ToolInvocation, call_next: Callable[[ToolInvocation], Awaitable[object]]
) -> object:
    """Worker-level middleware with kill points before and after the rest of the chain."""
    maybe_kill("middleware.before", invocation_tag(invocation), invocation.effect_id)
    result = await call_next(invocation)
    maybe_kill("middleware.after", invocation_tag(invocation), invocation.effect_id)
    return result

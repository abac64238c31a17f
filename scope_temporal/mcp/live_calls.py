"""MCP calls in flight on this worker, and the server's elicitation requests among them.

Activity side. A `tools/call` is sent once and owned by a task of the worker (`LiveCall`),
not by the activity that sent it: when the server asks the user for input mid-call
(`elicitation/create`), the activity ends with an input wait (the ordinary
`require_tool_input` outcome, so the host sees the same `wait_opened` event and answers
by the same signal/update, validated against `answer_schema`) while the call stays open
on the worker, held under its EffectID (`LiveCalls.held`). The answer's attempt takes
the held call back, gives the server its `ElicitResult`, and waits for what comes next
(the result, or another request). The call is never sent again: an answer reaching a
worker that does not hold the call (it restarted, or another worker of the pool took
the attempt) finds nothing, and the call's outcome is unknown.

MCP over stdio does not say which request an elicitation belongs to, so it goes to the
one call in flight on that server's connection; when several are, which one asked
cannot be known and the server gets MCP's error (its tool decides what to do).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from scope_temporal.mcp.progress import ProgressReports
from scope_temporal.mcp.values import McpSampling

HOLD_SECONDS = 3600.0
"""How long a held call waits for its answer; then the server is told `cancel` (MCP's
"dismissed") and the call goes on; its result waits for the answer's attempt."""
MAX_HELD = 256
"""Calls held at once on a worker; a server asking beyond that gets MCP's error."""

INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

_ACTIONS = ("accept", "decline", "cancel")


@dataclass(frozen=True)
class Asked:
    """A server's elicitation request, as the host is asked it."""

    prompt: dict[str, Any]
    """What the host is shown: the server, the tool, the message (and a URL to open)."""
    answer_schema: dict[str, Any]
    """What the answer must satisfy: an action, and for a form the content."""
    state: dict[str, str] = field(default_factory=lambda: {"mcp": "elicitation"})
    """The wait's continuation state: an elicitation, or a sampling request
    (`SAMPLING_STATE`: the Tool call Process answers it with a model call)."""
    on_timeout: Any = field(default_factory=lambda: {"action": "cancel"})
    """What the server gets when nobody answered within `HOLD_SECONDS`."""


def answer_schema(requested: dict[str, Any] | None) -> dict[str, Any]:
    """The schema of a host's answer: `{"action": "accept", "content": {...}}` (the
    content valid under the server's `requested` schema; a URL request takes no content),
    or `{"action": "decline"}` / `{"action": "cancel"}`, as MCP's `ElicitResult`."""
    accept: dict[str, Any] = {
        "type": "object",
        "properties": {"action": {"const": "accept"}},
        "required": ["action"],
        "additionalProperties": False,
    }
    if requested is not None:
        accept["properties"]["content"] = requested
        accept["required"] = ["action", "content"]
    refuse = {
        "type": "object",
        "properties": {"action": {"enum": ["decline", "cancel"]}},
        "required": ["action"],
        "additionalProperties": False,
    }
    return {"oneOf": [accept, refuse]}


class LiveCall:
    """One `tools/call` in flight: its task, and the requests it is waiting on."""

    def __init__(self, server: str, tool: str, send: Awaitable[Any]) -> None:
        self.server = server
        self.tool = tool
        self.client: Any = None
        """The MCP client it was sent on (dropped when its outcome is ambiguous)."""
        self.reports: ProgressReports | None = None
        """Where its progress notifications go."""
        self.sampling: McpSampling | None = None
        """Its Definition lets the server sample (None: a request is refused)."""
        self.definition = ""
        """The Definition whose call it is (named in a refusal)."""
        self.elicits = True
        """Whether the server may ask the user mid-call (False: a call that may run in the
        background, whose elicitation requests get MCP's error)."""
        self._asks: asyncio.Queue[tuple[Asked, asyncio.Future[Any]]] = asyncio.Queue()
        self._waiting: asyncio.Future[Any] | None = None
        self.task: asyncio.Task[Any] = asyncio.ensure_future(send)
        self.on_end: list[Callable[[], None]] = []
        self.task.add_done_callback(lambda _: [end() for end in self.on_end])

    async def next(self) -> Asked | None:
        """Wait for the call to end (None: read `task`) or to ask for input."""
        ask = asyncio.ensure_future(self._asks.get())
        try:
            await asyncio.wait({self.task, ask}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not ask.done():
                ask.cancel()
        if ask.done() and not ask.cancelled():
            asked, self._waiting = ask.result()
            return asked
        return None

    async def ask(self, asked: Asked) -> Any:
        """The server's request (from the connection's elicitation callback): wait for
        the host's answer, for at most `HOLD_SECONDS` (then `cancel`)."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        await self._asks.put((asked, future))
        try:
            return await asyncio.wait_for(asyncio.shield(future), HOLD_SECONDS)
        except TimeoutError:
            return asked.on_timeout

    def answer(self, response: Any) -> None:
        """Give the server the host's answer (validated against `answer_schema`)."""
        waiting, self._waiting = self._waiting, None
        if waiting is not None and not waiting.done():
            waiting.set_result(response)

    def cancel(self) -> None:
        """Stop the call (the MCP SDK sends the server `notifications/cancelled`)."""
        if self._waiting is not None and not self._waiting.done():
            self._waiting.set_result({"action": "cancel", "error": "the call was cancelled"})
        if self.reports is not None:
            self.reports.cancel()
        self.task.cancel()


class LiveCalls:
    """The calls in flight on one worker, by server, and those held for an answer."""

    def __init__(self) -> None:
        self._running: dict[str, set[LiveCall]] = {}
        self.held: dict[str, LiveCall] = {}
        """EffectID -> the call waiting for its host's answer."""

    def start(
        self, server: str, tool: str, send: Awaitable[Any], *, key: str | None = None
    ) -> LiveCall:
        """Track a call sent on the connection `key` (default: the server's shared one)."""
        call = LiveCall(server, tool, send)
        running = self._running.setdefault(key or server, set())
        running.add(call)
        call.on_end.append(lambda: running.discard(call))
        return call

    def hold(self, effect_id: str, call: LiveCall) -> None:
        self.held[effect_id] = call

    def take(self, effect_id: str) -> LiveCall | None:
        return self.held.pop(effect_id, None)

    async def elicited(self, key: str, params: Any) -> Any:
        """A server's `elicitation/create` on the connection `key`: the `ElicitResult`
        (as a dict) the host answered for the call that asked, or an MCP error."""
        running = [call for call in self._running.get(key, ()) if not call.task.done()]
        if len(running) != 1:
            return (
                INVALID_REQUEST,
                f"elicitation refused: {len(running)} calls are in flight on this "
                "connection and MCP does not say which one asks",
            )
        if len(self.held) >= MAX_HELD:
            return INVALID_REQUEST, "elicitation refused: too many calls wait for input"
        [call] = running
        if not call.elicits:
            return (
                INVALID_REQUEST,
                "elicitation refused: this call may run in the background, where the client "
                "takes no input mid-call",
            )
        asked = _asked(call, params)
        if isinstance(asked, tuple):
            return asked
        return await call.ask(asked)

    async def sampled(self, key: str, params: Any) -> Any:
        """A server's `sampling/createMessage` on the connection `key`: the answer the
        call's Tool call Process gave (`{"result": ...}` or `{"error": ...}`), or an MCP
        error (the Definition does not allow it, or which call asks is unknown)."""
        running = [call for call in self._running.get(key, ()) if not call.task.done()]
        if len(running) != 1:
            return (
                INVALID_REQUEST,
                f"sampling refused: {len(running)} calls are in flight on this connection "
                "and MCP does not say which one asks",
            )
        [call] = running
        if not call.elicits:
            return (
                INVALID_REQUEST,
                "sampling refused: this call may run in the background, where the client "
                "makes no model call mid-call",
            )
        if call.sampling is None:
            return (
                INVALID_REQUEST,
                f"Sampling not supported: Definition {call.definition!r} does not let MCP "
                f"server {call.server!r} use its model (declare McpServer({call.server!r}, "
                "sampling=True) to allow it)",
            )
        if len(self.held) >= MAX_HELD:
            return INVALID_REQUEST, "sampling refused: too many calls wait on this worker"
        asked = _sampling(call, params)
        if isinstance(asked, tuple):
            return asked
        return await call.ask(asked)

    def close(self) -> None:
        """Stop every call (the worker stops)."""
        for calls in list(self._running.values()):
            for call in list(calls):
                call.cancel()
        self.held.clear()


def _asked(call: LiveCall, params: Any) -> Asked | tuple[int, str]:
    from scope_temporal.errors import DefinitionError
    from scope_temporal.tools.validation import check_schema

    prompt: dict[str, Any] = {
        "mcp_elicitation": params.message,
        "server": call.server,
        "tool": call.tool,
    }
    if getattr(params, "mode", "form") == "url":
        prompt["url"] = params.url
        return Asked(prompt=prompt, answer_schema=answer_schema(None))
    requested = params.requested_schema
    requested = dict(requested) if isinstance(requested, dict) else requested.model_dump()
    try:
        check_schema(requested)
    except DefinitionError as error:
        return INVALID_PARAMS, f"elicitation refused: invalid requested schema: {error.message}"
    return Asked(prompt=prompt, answer_schema=answer_schema(requested))


def _sampling(call: LiveCall, params: Any) -> Asked | tuple[int, str]:
    """The wait a sampling request becomes: its text messages, system prompt and
    `maxTokens` (the Tool call Process caps it and calls the model)."""
    from scope_temporal.interaction.sampling_values import ANSWER_SCHEMA, SAMPLING_STATE

    if getattr(params, "tools", None):
        return INVALID_PARAMS, "sampling refused: tools in a sampling request are not supported"
    messages = []
    for message in params.messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        if any(getattr(b, "type", None) != "text" for b in blocks):
            return INVALID_PARAMS, "sampling refused: only text content is supported"
        text = "".join(b.text for b in blocks)
        messages.append({"role": message.role, "text": text})
    asked = {"messages": messages, "max_tokens": params.max_tokens}
    if params.system_prompt:
        asked["system_prompt"] = params.system_prompt
    prompt = {"mcp_sampling": asked, "server": call.server, "tool": call.tool}
    return Asked(
        prompt=prompt,
        answer_schema=ANSWER_SCHEMA,
        state=SAMPLING_STATE,
        on_timeout={"error": "sampling refused: no answer within the hold time"},
    )


def sample_result(response: Any) -> Any:
    """The MCP `CreateMessageResult` of a sampling wait's answer, or MCP's error."""
    from mcp_types import CreateMessageResult, ErrorData

    result = response.get("result") if isinstance(response, dict) else None
    if not isinstance(result, dict):
        message = response.get("error") if isinstance(response, dict) else None
        return ErrorData(code=INVALID_REQUEST, message=str(message or "sampling refused"))
    return CreateMessageResult.model_validate(result)


def elicit_result(response: Any) -> Any:
    """The MCP `ElicitResult` of a host's answer (validated against `answer_schema`)."""
    from mcp_types import ElicitResult

    action = response.get("action") if isinstance(response, dict) else None
    if action not in _ACTIONS:
        action = "cancel"
    content = response.get("content") if action == "accept" else None
    return ElicitResult(action=action, content=content)


__all__ = ["Asked", "LiveCall", "LiveCalls", "answer_schema", "elicit_result", "sample_result"]

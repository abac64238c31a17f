"""One MCP tool call, as the body of an ordinary tool: sent at most once, classified.

The call itself is owned by the worker (`live_calls`), so a server's elicitation request
can wait for the host's answer across attempts, and its progress goes to `progress`.

Activity side. An MCP tool reaches `scope.tool` as a `Tool` built from its recorded
record (`McpTool`), so the executor's rules apply unchanged: the permission is checked
and the arguments validated against the recorded schema before anything is sent,
middleware runs around it, and the outcome is classified as for a local tool:

- the server answered with a result -> success (its text content for the model; a
  structured result as JSON when it sent no text);
- a result with `isError`, or a JSON-RPC error saying the server refused the call
  (method not found, invalid params, or a code the server defines) -> `ToolFailure`: a
  definite failure the model sees;
- no connection could be opened (the request was never written) -> `ToolFailure` too,
  saying nothing was sent;
- anything else once the request may have been written (the connection closed, the
  server died, the MCP SDK's timeout, a response that does not parse, cancellation)
  -> the outcome is unknown (`HostFailure`): an unknown Effect for a person to settle.
  The connection is dropped (the next call opens a new one) and this call is never sent
  again, unless the Definition declares its tool safe to retry (`McpServer.retry_safe`):
  then it is sent again, `MAX_SENDS` times at most, counting the attempts Temporal made
  before this one. The JSON-RPC codes the MCP SDK also produces itself when a transport fails
  (`AMBIGUOUS_CODES`: connection closed, request timeout, an HTTP error status read as an
  internal error, a response that does not parse, an unexpected response) read as
  unknown even when a server sent them: the safe reading, since an internal error may
  come from a tool that had begun.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from pydantic import BaseModel

from scope_temporal.definition import Definition
from scope_temporal.errors import MCP_SESSION_LOST
from scope_temporal.mcp.binding import bound_definition, spec_of
from scope_temporal.mcp.connections import McpConnections, McpUnavailable
from scope_temporal.mcp.live_calls import LiveCall
from scope_temporal.mcp.progress import ProgressCallback, ProgressReports, SendProgress
from scope_temporal.mcp.sessions import McpSessionLost
from scope_temporal.mcp.values import MAX_SENDS, McpListing, McpServer, McpToolRecord
from scope_temporal.tools.context import ToolInvocation, current_tool_call, require_tool_input
from scope_temporal.tools.decorator import Tool
from scope_temporal.tools.failures import CodedToolFailure, HostFailure, ToolFailure
from scope_temporal.tools.output import ToolOutput
from scope_temporal.tools.validation import decode_arguments

RETRY_DELAY_SECONDS = 0.5
"""Wait before the n-th re-send: n times this."""

_log = logging.getLogger(__name__)

AMBIGUOUS_CODES = frozenset({-32000, -32001, -32600, -32603, -32700})
"""CONNECTION_CLOSED, REQUEST_TIMEOUT, INVALID_REQUEST, INTERNAL_ERROR, PARSE_ERROR: codes
the MCP SDK's client transports synthesize themselves (see the module docstring)."""


class _Arguments(BaseModel):
    """Unused: an MCP tool takes its arguments as the JSON object the schema checked."""


async def _never(**_: Any) -> None:  # pragma: no cover - McpTool.invoke replaces the body
    raise AssertionError("an MCP tool is invoked through McpTool.invoke")


class _Ambiguous(Exception):
    """The call's outcome is unknown (the message says why)."""


class McpTool(Tool[..., Any]):
    """A recorded MCP tool bound on the worker: its body sends `tools/call` once (up to
    `MAX_SENDS` times when its server declares it safe to retry)."""

    def __init__(
        self,
        record: McpToolRecord,
        server: McpServer,
        connections: McpConnections,
        progress: SendProgress | None = None,
        sent_before: int = 0,
        owner: str | None = None,
    ) -> None:
        super().__init__(_never, spec_of(record, server), (), _Arguments)
        self.record = record
        self.owner = owner
        """The Interaction whose own session the call uses (None: the worker's shared
        connection; `McpServer(session="interaction")`)."""
        self.retry_safe = server.retries(record.name)
        self.sampling = server.sampling_policy
        """Whether (within what limits) the server may ask the Interaction's model."""
        self.definition = ""
        """The Definition whose call this is (named when a sampling request is refused)."""
        self._connections = connections
        self._progress = progress
        self._sent_before = sent_before

    async def invoke(self, arguments_json: str) -> object:
        invocation = current_tool_call()
        arguments = decode_arguments(arguments_json)
        sends = self._sent_before  # attempts Temporal made before this one (each one send)
        if sends and not self.retry_safe:  # a retry the at-most-once rule forbids
            what = f"attempt {sends + 1} of the call"
            raise HostFailure(f"{_ambiguous(self.record, what)} It is not sent again.")
        while True:
            try:
                sends += 1  # a held call counts as the send of the attempt that asked
                if invocation.has_continuation and sends == self._sent_before + 1:
                    return await self._answered(invocation)
                return await self._run(invocation, await self._send(invocation, arguments))
            except _Ambiguous as ambiguous:
                if not self.retry_safe:
                    raise HostFailure(f"{ambiguous} It is not sent again.") from None
                if sends >= MAX_SENDS:
                    raise HostFailure(
                        f"{ambiguous} It was sent {sends} times in all (declared safe to "
                        "retry); it is not sent again."
                    ) from None
                _log.warning("%s Declared safe to retry: sending it again.", ambiguous)
                await asyncio.sleep(RETRY_DELAY_SECONDS * sends)
                invocation = invocation.model_copy(update={"has_continuation": False})

    async def _answered(self, invocation: ToolInvocation) -> object:
        """The answer to the call's elicitation request: to the call held here."""
        call = self._connections.live.take(invocation.effect_id)
        if call is None:
            raise _Ambiguous(_not_held(self.record))
        call.answer(invocation.continuation_response)
        return await self._run(invocation, call)

    async def _run(self, invocation: ToolInvocation, call: LiveCall) -> object:
        try:
            asked = await call.next()
        except BaseException:
            call.cancel()
            raise
        if asked is not None:  # the call stays open on this worker for the answer
            self._connections.live.hold(invocation.effect_id, call)
            require_tool_input(asked.prompt, asked.answer_schema, state=asked.state)
        return await self._settled(call)

    async def _send(
        self,
        invocation: ToolInvocation,
        arguments: dict[str, Any],
        background: ProgressCallback | None = None,
    ) -> LiveCall:
        """Send the call; `background`: it may run in the background (its progress goes
        there, and a server's elicitation request is refused: see `mcp.background`)."""
        record = self.record
        client, key = await self._client()
        reports, notified = None, background
        if background is None and self._progress is not None:
            reports = ProgressReports(self._progress, invocation.process_id, invocation.ref)
            notified = reports.notified
        sent = client.call_tool(record.name, arguments, progress_callback=notified)
        call = self._connections.live.start(record.server, record.name, sent, key=key)
        call.elicits = background is None
        if self.owner is not None:
            owner, sessions = self.owner, self._connections.sessions
            call.on_end.append(lambda: sessions.release(record.server, owner))
        call.client = client
        call.reports = reports
        call.sampling = self.sampling
        call.definition = self.definition
        return call

    async def send_for_background(
        self, invocation: ToolInvocation, arguments: dict[str, Any], notified: ProgressCallback
    ) -> LiveCall:
        """Send the call of a tool that may run in the background (`mcp.background`): its
        progress notifications go to `notified`, its elicitation requests are refused.

        Raises:
            HostFailure: an attempt after the first (it is never sent again).
            ToolFailure: no connection could be opened (nothing was sent).
        """
        if self._sent_before:
            what = f"attempt {self._sent_before + 1} of the call"
            raise HostFailure(f"{_ambiguous(self.record, what)} It is not sent again.")
        return await self._send(invocation, arguments, background=notified)

    async def settled(self, call: LiveCall) -> object:
        """The classified outcome of a call that ended (as `invoke` gives it).

        Raises:
            ToolFailure: a definite failure (`isError`, a JSON-RPC refusal).
            HostFailure: the outcome is unknown; the call is not sent again.
        """
        try:
            return await self._settled(call)
        except _Ambiguous as ambiguous:
            raise HostFailure(f"{ambiguous} It is not sent again.") from None

    def unknown(self, what: str) -> HostFailure:
        """The failure of a call whose outcome is unknown because of `what`."""
        return HostFailure(f"{_ambiguous(self.record, what)} It is not sent again.")

    async def _client(self) -> tuple[Any, str | None]:
        """The client to send on, and the key its calls in flight are grouped by: the
        Interaction's own session, or the worker's shared connection."""
        record = self.record
        if self.owner is not None:
            try:
                client = await self._connections.sessions.client(record.server, self.owner)
            except McpSessionLost as error:
                raise CodedToolFailure(
                    f"{error}; its state is gone and no new session is opened. The call of "
                    f"{record.name!r} was not sent.",
                    MCP_SESSION_LOST,
                ) from None
            return client, f"{record.server}@{self.owner}"
        try:
            return await self._connections.client(record.server), None
        except McpUnavailable as error:
            raise ToolFailure(f"{error}. The call of {record.name!r} was not sent.") from None

    async def _settled(self, call: LiveCall) -> object:
        """The classified outcome of a call that ended."""
        from mcp import MCPError

        record = self.record
        if call.reports is not None:
            await call.reports.close()
        try:
            result = call.task.result()
        except MCPError as error:
            if error.code in AMBIGUOUS_CODES:
                await self._connections.drop(record.server, call.client)
                raise _Ambiguous(_ambiguous(record, f"{error.message} ({error.code})")) from None
            raise ToolFailure(
                f"MCP server {record.server!r} refused the call of {record.name!r}: "
                f"{error.message} (JSON-RPC error {error.code})"
            ) from None
        except Exception as error:
            await self._connections.drop(record.server, call.client)
            raise _Ambiguous(_ambiguous(record, f"{type(error).__name__}: {error}")) from None
        text = _text_of(result)
        if result.is_error:
            raise ToolFailure(text or f"MCP tool {record.name!r} reported an error.")
        structured = result.structured_content
        return ToolOutput(for_llm=text, for_user=structured) if structured is not None else text


def _not_held(record: McpToolRecord) -> str:
    return (
        f"MCP server {record.server!r}, tool {record.name!r}: the call asked for input and "
        "this worker does not hold it (the worker that sent it restarted, or another worker "
        "took the answer); whether the tool ran to the end is unknown."
    )


def _ambiguous(record: McpToolRecord, what: str) -> str:
    return (
        f"MCP server {record.server!r}, tool {record.name!r}: the request was sent and no "
        f"result came back ({what}); whether the tool ran is unknown."
    )


def _text_of(result: Any) -> str:
    """The model-visible text: the text blocks; other blocks as JSON; else the
    structured content as JSON."""
    parts: list[str] = []
    for block in result.content:
        if getattr(block, "type", None) == "text":
            parts.append(block.text)
        else:
            parts.append(
                json.dumps(block.model_dump(mode="json", by_alias=True, exclude_none=True))
            )
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content))
    return "\n".join(parts)


def mcp_call_tool(
    record: McpToolRecord,
    definition: Definition | None,
    connections: McpConnections,
    progress: SendProgress | None = None,
    sent_before: int = 0,
    owner: str | None = None,
) -> tuple[Definition | None, McpTool | None]:
    """The Definition (the recorded tool bound) and the tool that serve an MCP call's
    attempt; no tool when the request is forged (the Definition does not declare its
    server, or its allow list leaves the tool out): the attempt is then refused.
    `progress`: where the server's progress notifications go (None: nowhere);
    `sent_before`: the attempts Temporal made before this one (a retry-safe call's);
    `owner`: the calling Interaction (its own session, when the server has one each)."""
    servers = definition.mcp_servers if definition is not None else ()
    server = next((s for s in servers if s.name == record.server), None)
    if (
        definition is None
        or server is None
        or record.tool != server.tool_prefix + record.name
        or (server.allow is not None and record.name not in server.allow)
    ):
        return definition, None
    owner = owner if server.per_interaction else None
    tool = McpTool(record, server, connections, progress, sent_before, owner)
    tool.definition = definition.name
    return bound_definition(definition, (McpListing(server=record.server, tools=(record,)),)), tool


__all__ = ["McpTool", "mcp_call_tool"]

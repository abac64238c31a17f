"""MCP servers as values: what a Definition declares, what a worker resolves, what is recorded.

Pure and workflow-safe: nothing here imports the `mcp` package or does I/O. Three kinds
of value live here, by who holds them:

- `McpServer` is what a Definition declares: a server *name* (the worker resolves it),
  which of its tools to offer (`allow`), the prefix their names get, and the permission
  their calls need. No command line, URL or credential: those never enter history.
- `McpStdio` / `McpHttp` are how a worker reaches a named server
  (`ScopeWorker(mcp_servers={"time": McpStdio(...)})`); they stay on the worker.
- `McpToolRecord` / `McpListing` are a server's tool list as it was fetched (activity
  `scope.mcp.list`) and checked, recorded in the Interaction's history, so replay and
  continue-as-new see the same list even after the server changed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from scope_temporal.errors import DefinitionError

McpPermission = Literal["read", "write", "exec"]

MAX_SENDS = 3
"""How often a call declared safe to retry is sent at most when its outcome stays
ambiguous (within an attempt, and attempts Temporal makes again after a lost worker or a
timeout, each counted as one send); then it is unknown."""

_SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")


class McpSampling(BaseModel):
    """What a server may ask of the Interaction's model (MCP's `sampling/createMessage`).

    Each request the server sends mid-call is a model call of the Interaction (its model,
    its options): activity `scope.mcp.sample`, never retried, counted against
    `max_model_calls` and `max_total_tokens` like the Interaction's own calls. See
    docs/mcp.md, Sampling.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_requests: int = Field(default=3, ge=1, le=100)
    """Sampling requests one tool call may make (a request beyond gets MCP's error)."""
    max_tokens: int | None = Field(default=None, ge=1)
    """A cap on the `maxTokens` a request asks for (the Definition's own `max_tokens`
    caps it too); None: only the Definition's."""


class McpServer(BaseModel):
    """One MCP server a Definition uses, by the name the worker resolves.

    Attributes:
        name: the server's name on the worker (`ScopeWorker(mcp_servers={name: ...})`).
        allow: the server's tool names (its own, unprefixed) the Definition offers; None
            offers every tool it lists. A name here the server does not list is refused
            when the list is fetched (the Interaction fails before its first model call).
        prefix: put before each tool name the model sees (default `"<name>_"`), so two
            servers cannot collide with each other or with local tools.
        permission: the capability a call needs (default `exec`, the safest; a server's
            own `readOnlyHint` is an untrusted hint and never lowers it).
        timeout: start-to-close limit of one call (default: the Definition's
            `tool_timeout`); a call over it is an unknown Effect, never re-sent.
        approval: `"destructive"` (recommended) asks a person before each call of a tool
            the server does not mark read-only or non-destructive (MCP's default for an
            unannotated tool is destructive); `"all"` before every call; None (default)
            leaves its tools to the Definition's `approval` policy alone. The hints are
            the server's claims: they can only add an approval, never lift one.
        retry_safe: True declares every tool of the server safe to send again, or a set
            of its tool names declares those: a call whose outcome is ambiguous (the
            connection dropped, the server died, a timeout inside the call) is sent
            again, up to 3 times in one attempt, instead of becoming unknown. False
            (default): every call at most once. The server's `idempotentHint` never
            does this by itself: only you can say a tool is safe to repeat.
        session: `"worker"` (default): one client session per worker, shared by every
            Interaction it serves (for servers whose tools keep no state between calls).
            `"interaction"`: each Interaction gets its own session of this server, held
            by one worker; every call of the Interaction goes to that worker, and a call
            after that worker was lost fails definitely with `tool.mcp.session_lost`
            (the state is gone; a new session is never opened silently). See
            docs/mcp.md, Stateful servers.
        sampling: False (default): a server asking the client's model mid-call
            (`sampling/createMessage`) gets MCP's error. True, or an `McpSampling`
            giving limits: each request runs as a model call of the Interaction, under
            its model, options and limits (see `McpSampling`, docs/mcp.md Sampling).
        background: True lets every tool of the server run in the background, or a set
            of its tool names lets those: a call still running after
            `foreground_timeout` moves to the background as a task, with the contract of
            a `@background_tool` (`run_in_background`, the task tools, progress,
            notifications; docs/mcp.md, Background calls). The call is sent once and
            stays on the worker that sent it (a handoff run, never recovered
            elsewhere). False (default): every call in the foreground.
        foreground_timeout: how long a call of a background tool runs in the
            foreground before it moves (default 120 s); None: only with an explicit
            `run_in_background=true`.

    Raises:
        DefinitionError: a name that is not 1-32 letters, digits, `_` or `-`; or
            `session="interaction"` with `retry_safe` (a call sent again must not reach
            another session than the one whose state it changed); or `background`
            with `retry_safe` or `session="interaction"` (not built: a background call
            is never sent again, and a session's calls are not moved).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    """The name the worker resolves (never a command line or URL)."""
    allow: tuple[str, ...] | None = None
    """The server's tools offered (None: all it lists)."""
    prefix: str | None = None
    """Put before each tool's name (None: `"<name>_"`)."""
    permission: McpPermission = "exec"
    """The capability every call of this server's tools needs."""
    timeout: timedelta | None = None
    """Start-to-close limit of one call (None: the Definition's `tool_timeout`)."""
    approval: Literal["destructive", "all"] | None = None
    """Which of its tools ask a person before each call, over the Definition's policy."""
    retry_safe: bool | frozenset[str] = False
    """Its tools (True: all; a set: those named) that may be sent again when a call's
    outcome is ambiguous; never inferred from the server's hints."""
    session: Literal["worker", "interaction"] = "worker"
    """Whose client session its calls use: the worker's shared one, or the calling
    Interaction's own (`"interaction"`, for servers that keep state between calls)."""
    sampling: bool | McpSampling = False
    """Whether (and within what limits) its sampling requests reach the Interaction's
    model; False: refused with MCP's error."""
    background: bool | frozenset[str] = False
    """Its tools (True: all; a set: those named) whose calls may move to the background."""
    foreground_timeout: timedelta | None = timedelta(seconds=120)
    """How long a background tool's call runs in the foreground before it moves."""

    def __init__(self, name: str, **options: Any) -> None:
        if not isinstance(name, str) or not _SERVER_NAME.match(name):
            raise DefinitionError(
                f"MCP server name {name!r} must be 1-32 letters, digits, '_' or '-' (it is "
                "the name the worker resolves, not a command line or URL)."
            )
        super().__init__(name=name, **options)
        if self.session == "interaction" and self.retry_safe:
            raise DefinitionError(
                f"MCP server {name!r}: session='interaction' cannot be retry_safe: a call "
                "sent again after its worker was lost would reach a new session, without "
                "the state the first one held. Declare one or the other."
            )
        if self.background and (self.retry_safe or self.per_interaction):
            raise DefinitionError(
                f"MCP server {name!r}: background calls cannot be retry_safe or use "
                "session='interaction' (not built: a background call is never sent again, "
                "and it stays on the worker that sent it)."
            )

    @property
    def tool_prefix(self) -> str:
        """What the model-visible name of each of its tools starts with."""
        return f"{self.name}_" if self.prefix is None else self.prefix

    @field_validator("foreground_timeout")
    @classmethod
    def _positive(cls, value: timedelta | None) -> timedelta | None:
        return value if value is not None and value > timedelta(0) else None  # <= 0: never

    def declaration(self) -> dict[str, Any]:
        """The declaration as JSON for the Definition's digest (`retry_safe`, `session`
        and `sampling` and `background` (with its `foreground_timeout`) only when
        declared, so the digests of earlier declarations stay as they were)."""
        data = self.model_dump(
            mode="json",
            exclude={"retry_safe", "session", "sampling", "background", "foreground_timeout"},
        )
        policy = self.sampling_policy
        if policy is not None:
            data["sampling"] = policy.model_dump(mode="json")
        if self.background:
            moves = self.background
            data["background"] = True if moves is True else sorted(moves)
            timeout = self.foreground_timeout
            data["foreground_timeout"] = None if timeout is None else str(timeout)
        if self.session != "worker":
            data["session"] = self.session
        data["timeout"] = None if self.timeout is None else str(self.timeout)
        if self.retry_safe:
            safe = self.retry_safe
            data["retry_safe"] = True if safe is True else sorted(safe)
        return data

    def retries(self, tool: str) -> bool:
        """Whether a call of its tool `tool` (the server's name for it) may be sent again
        when its outcome is ambiguous."""
        safe = self.retry_safe
        return safe is True or (isinstance(safe, frozenset) and tool in safe)

    def moves(self, tool: str) -> bool:
        """Whether a call of its tool `tool` (the server's name for it) may run in the
        background (`background`)."""
        moves = self.background
        return moves is True or (isinstance(moves, frozenset) and tool in moves)

    @property
    def sampling_policy(self) -> McpSampling | None:
        """The limits its sampling requests run under; None: they are refused."""
        if self.sampling is True:
            return McpSampling()
        return self.sampling if isinstance(self.sampling, McpSampling) else None

    @property
    def per_interaction(self) -> bool:
        """Whether each Interaction has its own session of this server."""
        return self.session == "interaction"

    def asks_before(self, record: McpToolRecord) -> bool:
        """Whether a call of `record` needs approval under `approval`."""
        return self.approval == "all" or (self.approval == "destructive" and record.destructive)


class McpToolRecord(BaseModel):
    """One tool of a server's recorded list, as the model and the call see it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    server: str
    """The server's name (as the Definition declares it)."""
    name: str
    """The tool's name on the server (what `tools/call` sends)."""
    tool: str
    """The name the model calls it by (the prefix, then `name`)."""
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    """The arguments' JSON schema as the server listed it (checked valid)."""
    annotations: dict[str, Any] = {}
    """The server's hints (`readOnlyHint`, `destructiveHint`, ...): untrusted, they never
    make a call retry or lower its permission; an approval policy may read them."""
    retry_safe: bool = False
    """The Definition declares it safe to send again (`McpServer(retry_safe=...)`): its
    `scope.tool` attempts may be retried (up to `MAX_SENDS`) after a lost worker."""

    @property
    def destructive(self) -> bool:
        """What the server claims (MCP's default when it says nothing: destructive)."""
        if self.annotations.get("readOnlyHint") is True:
            return False
        return self.annotations.get("destructiveHint", True) is not False


class McpListing(BaseModel):
    """One server's tools as fetched and checked for an Interaction (in its history)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    server: str
    tools: tuple[McpToolRecord, ...] = ()


class McpListInput(BaseModel):
    """`scope.mcp.list`: fetch the tool lists of a Definition's MCP servers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    definition: str
    digest: str
    """The worker refuses to list for another version of the Definition."""


class McpListed(BaseModel):
    """Every server listed, each list checked."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["listed"] = "listed"
    listings: tuple[McpListing, ...]


class McpListRefused(BaseModel):
    """A list could not be fetched, or was refused; the Interaction fails with `code`
    before its first model call (nothing ran)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["refused"] = "refused"
    code: str
    message: str


McpListOutcome = McpListed | McpListRefused


@dataclass(frozen=True)
class McpStdio:
    """A server the worker starts as a subprocess and talks to over stdin/stdout.

    The process is started on the first call that needs it and reused; one that died is
    started again for the next call (the call it was running is an unknown Effect).
    """

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = None
    """The environment of the process (None: the MCP SDK's safe default subset)."""
    cwd: str | None = None


@dataclass(frozen=True)
class McpHttp:
    """A server reached over streamable HTTP at `url`, with `headers` (e.g. a bearer
    token: it stays on the worker, never in history)."""

    url: str
    headers: Mapping[str, str] = field(default_factory=dict)


McpTarget = McpStdio | McpHttp

__all__ = [
    "MAX_SENDS",
    "McpHttp",
    "McpListInput",
    "McpListOutcome",
    "McpListRefused",
    "McpListed",
    "McpListing",
    "McpSampling",
    "McpServer",
    "McpStdio",
    "McpTarget",
    "McpToolRecord",
]

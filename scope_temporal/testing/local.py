"""LocalRunner: run Interactions in-process, without Temporal.

It runs the very drivers the workflows run (`scope_temporal.driver`), the same state
machines, and the same model-call and tool-attempt code as the worker's activities; only
the engine differs (`engine.py`: asyncio tasks instead of activities and child
workflows). So payload limits, steer checks, pause forwarding, the authority guard and
every rule of the loop behave as on Temporal, and users' agent tests run in milliseconds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from scope_temporal import errors
from scope_temporal.activities.served import ContextReducer
from scope_temporal.background.task_tools import TASK_TOOLS
from scope_temporal.chat import Message, Options
from scope_temporal.definition import Definition
from scope_temporal.driver.history_limits import check_continue_as_new_every
from scope_temporal.interaction.session_values import SessionSnapshot
from scope_temporal.mcp.connections import McpConnections
from scope_temporal.mcp.values import McpTarget
from scope_temporal.models.protocol import Model
from scope_temporal.observers import ObserverHub
from scope_temporal.outputs import Failure
from scope_temporal.payload_limits import DEFAULT_PAYLOAD_LIMIT_BYTES
from scope_temporal.payloads import InteractionCarry, InteractionInput, SessionInput
from scope_temporal.registry import Registry
from scope_temporal.run_context import check_run_context
from scope_temporal.testing.local_mcp import local_mcp_settings
from scope_temporal.testing.local_run import LocalRun
from scope_temporal.testing.local_session import LocalSession, SharedSession
from scope_temporal.tools.middleware import Middleware
from scope_temporal.tools.registry import ToolRegistry


class LocalRunner:
    """Runs Definitions with local tools and models through the drivers, in-process.

    Background tools work too: their tasks run in this process (see `local_tasks`).

    Args:
        definitions: every Definition a run may start (delegates included).
        tools: the tool implementations, by name.
        models: models by the name Definitions refer to (e.g. `{"default": ScriptedModel(...)}`).
        reducers: context reducers by name.
        observers: observer objects (see `scope_temporal.observers`).
        middleware: worker-level tool middleware, outermost first.
        payload_limit_bytes: the largest payload accepted, as `ScopeWorker`'s (1 MB).
    """

    def __init__(
        self,
        *,
        definitions: Iterable[Definition],
        tools: Iterable[Any] = (),
        models: Mapping[str, Model],
        reducers: Mapping[str, ContextReducer] | None = None,
        observers: Sequence[Any] = (),
        middleware: Sequence[Middleware] = (),
        payload_limit_bytes: int = DEFAULT_PAYLOAD_LIMIT_BYTES,
        mcp_servers: Mapping[str, McpTarget] | None = None,
    ) -> None:
        self.registry = Registry(definitions, payload_limit=payload_limit_bytes)
        self.mcp = McpConnections(mcp_servers or {}, serving=self.registry.definitions)
        """The MCP servers reached in-process, as a worker's (`aclose()` stops them)."""
        tools = list(tools)
        if any(d.binds_background_tools for d in self.registry.definitions):
            tools += TASK_TOOLS
        self.tools = ToolRegistry(tools)
        self.models = dict(models)
        self.reducers = dict(reducers or {})
        self.observers = ObserverHub(list(observers))
        self.middleware = tuple(middleware)
        self._runs = 0
        self._sessions: dict[str, SharedSession] = {}

    def session(
        self,
        definition: str,
        *,
        id: str | None = None,
        context: Mapping[str, Any] | None = None,
        approved_tools: Sequence[str] = (),
        continue_as_new_every: int = 100,
    ) -> LocalSession:
        """A handle on a session of `definition` (another handle on the same session for
        a known id, with its own `context` and `approved_tools`), as
        `ScopeClient.session`: its first `send` starts it.

        Raises:
            ConfigurationError: `continue_as_new_every` is below 1.
            UnknownDefinition: no such Definition.
            InvalidRunContext: `context` is not a JSON object within 16 KiB.
            InvalidSignal: that id is a session of another Definition.
        """
        check_continue_as_new_every(continue_as_new_every, f"Session of {definition!r}")
        checked = check_run_context(context) if context is not None else None
        if self.registry.lookup(definition) is None:
            raise errors.UnknownDefinition(
                f"No Definition named {definition!r} (known: {self.registry.names})."
            )
        session_id = id or f"{definition}-session-{len(self._sessions) + 1}"
        start = SessionInput(
            definition=definition,
            context=checked,
            approved_tools=tuple(approved_tools),
            continue_as_new_every=continue_as_new_every,
        )
        known = self._sessions.get(session_id)
        if known is None:
            known = self._sessions[session_id] = SharedSession(self, session_id, start)
        elif known.definition != definition:
            raise errors.InvalidSignal(
                f"Session {session_id!r} runs Definition {known.definition!r}, not "
                f"{definition!r}. Use another session id."
            )
        return LocalSession(known, start)

    async def sessions(self) -> list[SessionSnapshot]:
        """Every session of this runner, oldest first."""
        return [s.driver.snapshot() for s in self._sessions.values()]

    @property
    def definitions(self) -> dict[str, Definition]:
        """The Definitions by name."""
        return {d.name: d for d in self.registry.definitions}

    async def start(
        self,
        definition: str,
        messages: Sequence[Message] | str,
        *,
        id: str | None = None,
        context: Mapping[str, Any] | None = None,
        approved_tools: Sequence[str] = (),
        options: Options | None = None,
    ) -> LocalRun:
        """Start an Interaction of `definition`; returns at once with its handle.

        `context` is the run context; `approved_tools` and `options` as for
        `ScopeClient.start` (InvalidOptions for options a model cannot take; nothing is
        started).

        Raises:
            UnknownDefinition: no such Definition.
            InvalidRunContext: `context` is not a JSON object within 16 KiB.
        """
        if isinstance(messages, str):
            messages = [Message.user(messages)]
        checked = check_run_context(context) if context is not None else None
        if self.registry.lookup(definition) is None:
            raise errors.UnknownDefinition(
                f"No Definition named {definition!r} (known: {self.registry.names})."
            )
        self._runs += 1
        run = LocalRun(self, id or f"local-{self._runs}")
        settings = await local_mcp_settings(self.registry, definition, self.mcp)
        if isinstance(settings, Failure):
            raise errors.refusal(settings.code, settings.message)
        opened = run.engine.open_interaction(
            run.id,
            InteractionInput(
                definition=definition,
                messages=tuple(messages),
                context=checked,
                approved_tools=tuple(approved_tools),
                options=options,
                carry=InteractionCarry(settings=settings),
            ),
        )
        if isinstance(opened, Failure):
            raise errors.refusal(opened.code, opened.message)
        run._started(opened)
        return run

    async def aclose(self) -> None:
        """Stop the MCP servers started for this runner (`mcp_servers`)."""
        await self.mcp.aclose()


__all__ = ["LocalRun", "LocalRunner"]

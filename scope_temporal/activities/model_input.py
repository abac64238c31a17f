"""Rebuild the exact model request on the worker from a `ModelActivityInput`.

The input names the conversation prefix by reference (`scope_temporal.context_refs`).
The prefix comes from this worker's cache of the latest context each Interaction (or
session: its turns follow one another) sent, or, on a miss (another worker served the
previous call, a restart), from the workflow itself through the `scope.context` query (a
turn's base from its session's); either way it is checked against the chain digest
before use. The tool manifest is rebuilt from the registered Definition with the
same digest. The rebuilt request equals the one the workflow retains, message for message.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable

from scope_temporal.chat import Message
from scope_temporal.context_refs import ContextChain, prefix_digest
from scope_temporal.definition import Definition
from scope_temporal.interaction import rules
from scope_temporal.interaction.effects import ModelEffectRequest
from scope_temporal.mcp.binding import bound_definition
from scope_temporal.payloads import ModelActivityInput

PrefixFetcher = Callable[[str, int, int], Awaitable[list[Message]]]
"""`fetch(workflow_id, start, end)`: messages [start, end) of that workflow's context (the
Interaction's own messages, or a session's transcript), by its `scope.context` query."""

DEFAULT_CACHED_CONVERSATIONS = 256


class ContextUnavailable(Exception):
    """The conversation prefix could not be obtained or did not match its digest.

    Raised before the model is called: the resulting unknown Effect's diagnostic says so,
    and resolving it with a response from calling the model by hand repeats nothing.
    """


class RequestMismatch(Exception):
    """This worker serves another version of the Definition (or none): nothing was called."""


class ModelRequestBuilder:
    """Worker-side: the latest context of each Interaction, to rebuild requests from refs.

    Args:
        max_conversations: how many Interactions' contexts to keep (least recently used
            ones are dropped; a dropped one costs a query on its next call, nothing else).
    """

    def __init__(self, max_conversations: int = DEFAULT_CACHED_CONVERSATIONS) -> None:
        self._chains: OrderedDict[str, ContextChain] = OrderedDict()
        self._max = max_conversations

    async def rebuild(
        self, input: ModelActivityInput, definition: Definition | None, fetch: PrefixFetcher
    ) -> ModelEffectRequest:
        """The request the workflow retains for this call, with a turn's base expanded
        (the messages are the whole context the model is sent).

        Raises:
            RequestMismatch: the Definition is not registered here, or under another digest.
            ContextUnavailable: the prefix could not be fetched or failed its digest check.
        """
        if definition is None or definition.digest != input.digest:
            found = "is not registered" if definition is None else "has another digest"
            raise RequestMismatch(
                f"Definition {input.definition!r} {found} on this worker (the Interaction "
                f"runs digest {input.digest[:12]}); serve the same Definitions on every "
                "worker of the task queue."
            )
        definition = bound_definition(definition, input.mcp_tools)
        manifest = rules.manifest(definition, list(input.advertised))
        if isinstance(manifest, str):
            raise RequestMismatch(manifest)
        messages = await self._messages(input, fetch)
        own = len(messages) - (input.base.count if input.base is not None else 0)
        retained = input.request(
            messages[len(messages) - own :], manifest, definition.instructions or None
        )
        return retained.expanded(messages[: len(messages) - own])

    async def _messages(
        self, input: ModelActivityInput, fetch: PrefixFetcher
    ) -> tuple[Message, ...]:
        """The whole context of the call (a turn's base included)."""
        prefix, base = input.prefix, input.base
        # a session's turns follow one another: one chain per session serves them all
        key = base.workflow_id if base is not None else input.process_id
        chain = self._chains.pop(key, None)
        if chain is None or not chain.holds(prefix):
            chain = ContextChain()
            chain.extend(await self._fetched(input, fetch))
        else:
            chain.truncate(prefix.count)
        chain.extend(input.new_messages)
        self._chains[key] = chain
        while len(self._chains) > self._max:
            self._chains.popitem(last=False)
        return chain.messages

    async def _fetched(self, input: ModelActivityInput, fetch: PrefixFetcher) -> list[Message]:
        """The prefix from the workflows that hold it, checked against its digests."""
        prefix, base = input.prefix, input.base
        fetched: list[Message] = []
        if base is not None and base.count:
            fetched = await fetch(base.workflow_id, 0, base.count)
            if len(fetched) != base.count or prefix_digest(fetched) != base.digest:
                raise ContextUnavailable(
                    f"The session transcript {base.workflow_id!r} fetched for "
                    f"{input.process_id!r} does not match the request's base ({base.count} "
                    "messages, by digest); the model was not called."
                )
        own = input.own_prefix
        if own:
            fetched += await fetch(input.process_id, 0, own)
        if len(fetched) != prefix.count or prefix_digest(fetched) != prefix.digest:
            raise ContextUnavailable(
                f"The first {prefix.count} messages of {input.process_id!r} fetched from "
                "the workflow do not match the request's digest; the model was not called."
            )
        return fetched

    def remember_reply(self, input: ModelActivityInput, reply: Message) -> None:
        """The call was answered with `reply`, sent unreduced: it follows the context in
        the chain, so the next call (a session's next turn, whose base ends with it) finds
        everything here."""
        key = input.base.workflow_id if input.base is not None else input.process_id
        chain = self._chains.get(key)
        if chain is not None and len(chain) == input.prefix.count + len(input.new_messages):
            chain.extend([reply])


__all__ = ["ContextUnavailable", "ModelRequestBuilder", "PrefixFetcher", "RequestMismatch"]

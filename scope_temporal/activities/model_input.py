"""Rebuild the exact model request on the worker from a `ModelActivityInput`.

The input names the conversation prefix by reference (`scope_temporal.context_refs`).
The prefix comes from this worker's cache of the latest context each Interaction sent,
or, on a miss (another worker served the previous call, a restart), from the workflow
itself through the `scope.context` query; either way it is checked against the chain
digest before use. The tool manifest is rebuilt from the registered Definition with the
same digest. The rebuilt request equals the one the workflow retains, message for message.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable

from scope_temporal.chat import Message
from scope_temporal.context_refs import ContextChain, ContextRef, prefix_digest
from scope_temporal.definition import Definition
from scope_temporal.interaction import rules
from scope_temporal.interaction.effects import ModelEffectRequest
from scope_temporal.payloads import ModelActivityInput

PrefixFetcher = Callable[[ContextRef], Awaitable[list[Message]]]
"""Fetches the first `ref.count` messages of the call's context from the workflow."""

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
        """The request the workflow retains for this call.

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
        manifest = rules.manifest(definition, list(input.advertised))
        if isinstance(manifest, str):
            raise RequestMismatch(manifest)
        return input.request(await self._messages(input, fetch), manifest)

    async def _messages(
        self, input: ModelActivityInput, fetch: PrefixFetcher
    ) -> tuple[Message, ...]:
        prefix = input.prefix
        chain = self._chains.pop(input.process_id, None)
        if chain is None or not chain.holds(prefix):
            fetched = await fetch(prefix) if prefix.count else []
            if len(fetched) != prefix.count or prefix_digest(fetched) != prefix.digest:
                raise ContextUnavailable(
                    f"The first {prefix.count} messages of {input.process_id!r} fetched from "
                    "the workflow do not match the request's digest; the model was not called."
                )
            chain = ContextChain()
            chain.extend(fetched)
        else:
            chain.truncate(prefix.count)
        chain.extend(input.new_messages)
        self._chains[input.process_id] = chain
        while len(self._chains) > self._max:
            self._chains.popitem(last=False)
        return chain.messages


__all__ = ["ContextUnavailable", "ModelRequestBuilder", "PrefixFetcher", "RequestMismatch"]

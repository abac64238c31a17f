"""Content-addressed references to a conversation prefix (pure; workflow and worker side).

Between model calls the working context only grows (until a context reducer or a host
settlement replaces it), and every message in it already entered the workflow's history
once: as the Interaction's input, a model response, a tool result or a steer. So the
`scope.model` activity input carries only the messages that are new since the previous
call plus a `ContextRef` naming the prefix by its length and *chain digest*; the worker
takes the prefix from its cache, or on a miss asks the workflow (query `scope.context`)
and checks what it got against the digest. History then grows per round by what the round
added, never by the whole conversation.

The chain digest of messages m1..mk is d_k = sha256(d_{k-1} + json(m_k)), d_0 = "": each
message is hashed once however long the conversation gets, and a digest pins the exact
messages (and their order) before it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from scope_temporal.chat import Message


class ContextRef(BaseModel):
    """The first `count` messages of a context, named by their chain digest."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    count: int
    digest: str
    """Chain digest of those messages; "" for the empty prefix."""


EMPTY_REF = ContextRef(count=0, digest="")


def chain_digest(previous: str, message: Message) -> str:
    """The chain digest after `message`, given the digest of everything before it."""
    return hashlib.sha256((previous + message.model_dump_json()).encode()).hexdigest()


class ContextChain:
    """A message list with the chain digest after each message, kept in step cheaply.

    `sync` keeps the longest common prefix with the new list (compared by identity: the
    loop shares its immutable messages, so an unchanged message is the same object) and
    hashes only what follows it.
    """

    def __init__(self) -> None:
        self._messages: list[Message] = []
        self._digests: list[str] = []

    @property
    def messages(self) -> tuple[Message, ...]:
        return tuple(self._messages)

    def __len__(self) -> int:
        return len(self._messages)

    def sync(self, messages: Sequence[Message]) -> int:
        """Make the chain hold `messages`; returns how many leading messages were kept."""
        kept = 0
        limit = min(len(self._messages), len(messages))
        while kept < limit and messages[kept] is self._messages[kept]:
            kept += 1
        self.truncate(kept)
        self.extend(messages[kept:])
        return kept

    def truncate(self, count: int) -> None:
        """Keep only the first `count` messages."""
        del self._messages[count:]
        del self._digests[count:]

    def extend(self, messages: Sequence[Message]) -> None:
        digest = self._digests[-1] if self._digests else ""
        for message in messages:
            digest = chain_digest(digest, message)
            self._messages.append(message)
            self._digests.append(digest)

    def ref(self, count: int) -> ContextRef:
        """The reference to the first `count` messages (0 <= count <= len(self))."""
        if count == 0:
            return EMPTY_REF
        return ContextRef(count=count, digest=self._digests[count - 1])

    def holds(self, ref: ContextRef) -> bool:
        """True if the first `ref.count` messages here are exactly the ones `ref` names."""
        if ref.count == 0:
            return True
        return ref.count <= len(self._digests) and self._digests[ref.count - 1] == ref.digest


def prefix_digest(messages: Sequence[Message]) -> str:
    """The chain digest of `messages` (checks a prefix fetched from elsewhere)."""
    digest = ""
    for message in messages:
        digest = chain_digest(digest, message)
    return digest


__all__ = ["EMPTY_REF", "ContextChain", "ContextRef", "chain_digest", "prefix_digest"]

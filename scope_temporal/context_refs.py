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

A session's turn goes one step further: its context starts with the session's transcript
*by reference* (`BaseRef`: the session workflow's id, the transcript's length and chain
digest), and the turn holds only the messages after it. Its refs count from the start of
the whole context (base included) and its digests continue the base's chain, so one
digest check covers both parts; a worker that misses them asks the session's
`scope.context` for the base and the turn's for the rest.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import ClassVar

from pydantic import ConfigDict

from scope_temporal.chat import Message
from scope_temporal.wire import Derived


class ContextRef(Derived):
    """The first `count` messages of a context, named by their chain digest (written in
    base64url on the wire: `scope_temporal.wire`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    WIRE_DIGESTS: ClassVar[frozenset[str]] = frozenset({"digest"})

    count: int
    digest: str
    """Chain digest of those messages; "" for the empty prefix."""


EMPTY_REF = ContextRef(count=0, digest="")


class BaseRef(Derived):
    """The first `count` messages of a turn's context: a session's transcript, held by
    the workflow `workflow_id` (its `scope.context` query returns them)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    WIRE_DIGESTS: ClassVar[frozenset[str]] = frozenset({"digest"})

    workflow_id: str
    count: int
    digest: str
    """Chain digest of those messages; "" for the empty transcript."""

    @property
    def ref(self) -> ContextRef:
        return ContextRef(count=self.count, digest=self.digest)


def chain_digest(previous: str, message: Message) -> str:
    """The chain digest after `message`, given the digest of everything before it."""
    return hashlib.sha256((previous + message.model_dump_json()).encode()).hexdigest()


class ContextChain:
    """A message list with the chain digest after each message, kept in step cheaply.

    `sync` keeps the longest common prefix with the new list (compared by identity: the
    loop shares its immutable messages, so an unchanged message is the same object) and
    hashes only what follows it.

    Args:
        seed: what comes before the chain's own messages (a turn's base): its refs count
            from the start of the whole context and its digests continue the seed's.
    """

    def __init__(self, seed: ContextRef = EMPTY_REF) -> None:
        self.seed = seed
        self._messages: list[Message] = []
        self._digests: list[str | None] = []  # None: not computed yet (`resumed`)

    @classmethod
    def resumed(cls, seed: ContextRef, messages: Sequence[Message], digest: str) -> ContextChain:
        """A chain holding `messages`, whose chain digest after the last one is `digest`
        (continue-as-new carries it): nothing is hashed now, and a digest inside the
        prefix is computed only if something asks for it.

        The caller vouches that `digest` is the chain digest of `messages` after `seed`."""
        chain = cls(seed)
        chain._messages = list(messages)
        chain._digests = [None] * len(messages)
        if messages:
            chain._digests[-1] = digest
        return chain

    @property
    def messages(self) -> tuple[Message, ...]:
        return tuple(self._messages)

    def __len__(self) -> int:
        return len(self._messages)

    def common(self, messages: Sequence[Message]) -> int:
        """How many leading messages of `messages` the chain holds already."""
        kept = 0
        limit = min(len(self._messages), len(messages))
        while kept < limit and messages[kept] is self._messages[kept]:
            kept += 1
        return kept

    def sync(self, messages: Sequence[Message]) -> int:
        """Make the chain hold `messages`; returns how many leading messages were kept."""
        kept = self.common(messages)
        self.truncate(kept)
        self.extend(messages[kept:])
        return kept

    def truncate(self, count: int) -> None:
        """Keep only the first `count` messages."""
        del self._messages[count:]
        del self._digests[count:]

    def extend(self, messages: Sequence[Message]) -> None:
        digest = self._digest_at(len(self._messages))
        for message in messages:
            digest = chain_digest(digest, message)
            self._messages.append(message)
            self._digests.append(digest)

    def ref(self, count: int) -> ContextRef:
        """The reference to the seed and the first `count` messages of the chain
        (0 <= count <= len(self))."""
        if count == 0:
            return self.seed
        return ContextRef(count=self.seed.count + count, digest=self._digest_at(count))

    def holds(self, ref: ContextRef) -> bool:
        """True if the seed and the first `ref.count - seed.count` messages here are
        exactly the ones `ref` names."""
        own = ref.count - self.seed.count
        if own == 0:
            return ref.digest == self.seed.digest
        return 0 < own <= len(self._digests) and self._digest_at(own) == ref.digest

    def _digest_at(self, count: int) -> str:
        """The chain digest after the first `count` messages (computed once if unknown)."""
        if count == 0:
            return self.seed.digest
        known = self._digests[count - 1]
        if known is None:
            known = prefix_digest(self._messages[:count], self.seed.digest)
            self._digests[count - 1] = known
        return known


def prefix_digest(messages: Sequence[Message], start: str = "") -> str:
    """The chain digest of `messages` (checks a prefix fetched from elsewhere), continuing
    the chain digest `start` of whatever comes before them."""
    digest = start
    for message in messages:
        digest = chain_digest(digest, message)
    return digest


__all__ = [
    "EMPTY_REF",
    "BaseRef",
    "ContextChain",
    "ContextRef",
    "chain_digest",
    "prefix_digest",
]

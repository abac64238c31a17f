"""The host client: `ScopeClient` starts and finds Interactions and sessions;
`InteractionHandle` drives one tree (steer, answer, resolve, snapshot, result);
`SessionHandle` one conversation (send, transcript, end)."""

from scope_temporal.client.handle import InteractionHandle
from scope_temporal.client.scope import InteractionSummary, ScopeClient
from scope_temporal.client.session import SessionHandle, SessionSummary

__all__ = [
    "InteractionHandle",
    "InteractionSummary",
    "ScopeClient",
    "SessionHandle",
    "SessionSummary",
]

"""The host client: `ScopeClient` starts and finds Interactions; `InteractionHandle`
drives one tree (steer, answer, resolve, snapshot, result)."""

from scope_temporal.client.handle import InteractionHandle
from scope_temporal.client.scope import InteractionSummary, ScopeClient

__all__ = ["InteractionHandle", "InteractionSummary", "ScopeClient"]

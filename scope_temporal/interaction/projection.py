"""The read-only projection of an Interaction's state that hosts and the UI see."""

from __future__ import annotations

from scope_temporal.ids import tool_call_ref
from scope_temporal.interaction.snapshot import (
    ActiveDelegate,
    ProcessSnapshot,
    Status,
    UnknownEffect,
)
from scope_temporal.interaction.state import InteractionState


def interaction_snapshot(
    s: InteractionState,
    status: Status,
    active_children: tuple[str, ...],
    background_tasks: tuple[str, ...],
) -> ProcessSnapshot:
    """The snapshot of one Interaction (its children report their own)."""
    unknown: tuple[UnknownEffect, ...] = ()
    if s.model is not None and s.model.unknown:
        unknown = (
            UnknownEffect(
                process_id=s.process_id,
                effect_id=s.model.request.effect_id,
                kind="model",
                request=s.model.request,
                ref=None,
                diagnostic=s.model.diagnostic,
            ),
        )
    running = [x for x in (s.round.slots if s.round else []) if x.status == "running"]
    return ProcessSnapshot(
        process_id=s.process_id,
        kind="interaction",
        definition=s.definition,
        status=status,
        model_calls=s.model_calls,
        context=tuple(s.context),
        settled_results=tuple(s.rounds),
        unknown_effects=unknown,
        active_delegates=tuple(
            ActiveDelegate(
                process_id=x.process_id or "",
                ref=tool_call_ref(s.process_id, s.round.model_call_seq, x.index),
                name=x.call.name,
            )
            for x in running
            if x.target == "delegate" and s.round is not None
        ),
        active_children=active_children,
        artifacts=tuple(s.artifacts),
        applied_signals=tuple(s.applied_signals),
        pending_signals=tuple(e.signal_id for e in s.mailbox),
        rejected_signals=tuple(s.rejected_signals),
        advertised_tools=tuple(s.advertised),
        output=s.output,
        failure=s.failure,
        background_tasks=background_tasks,
    )

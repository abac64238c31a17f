"""What a cancel leaves unsettled (conformance rule c59: docs/differences.md, the `test_c59_*`
tests).

Cancelling an Interaction ends it while calls may still run: a model call in flight and
the round's running tool calls. Their children are cancelled, and nothing can prove what
they did first, so each is kept as an unknown Effect with exactly the request it was
started with; the canceled Interaction's snapshot lists them (`unknown_effects`). A model
call already held unknown is listed as before, not twice. A running delegate is not: it
is an Interaction of its own, cancelled with its parent, and its own snapshot lists what
it could not settle (the parent's snapshot keeps naming it in `active_delegates`).
"""

from __future__ import annotations

from scope_temporal.definition import Definition
from scope_temporal.interaction.rounds import tool_request
from scope_temporal.interaction.snapshot import UnknownEffect
from scope_temporal.interaction.state import InteractionState

DIAGNOSTIC = "running when the Interaction was cancelled: its outcome is unknown"


def unsettled(definition: Definition, s: InteractionState) -> list[UnknownEffect]:
    """The calls a cancel of `s` (still live) leaves unsettled, model call first."""
    found: list[UnknownEffect] = []
    model = s.model
    if s.phase == "model" and model is not None and model.emitted and not model.unknown:
        found.append(
            UnknownEffect(
                process_id=s.process_id,
                effect_id=model.request.effect_id,
                kind="model",
                request=model.request,
                ref=None,
                diagnostic=DIAGNOSTIC,
            )
        )
    seq = s.round.model_call_seq if s.round is not None else 0
    for slot in s.round.slots if s.round is not None else ():
        if slot.status != "running" or slot.target != "tool":
            continue
        request = tool_request(definition, s, seq, slot)
        found.append(
            UnknownEffect(
                process_id=request.process_id,
                effect_id=slot.effect_id,
                kind="tool",
                request=request,
                ref=request.ref,
                diagnostic=DIAGNOSTIC,
            )
        )
    return found

"""Which registered implementation runs a background attempt (pure: reads the registry).

A task runs every attempt on an implementation of the capability class it was launched
under (`AttemptPlan.capability`): the tool's registration if it is still of that class,
else the retired implementation of that class (`BackgroundTool.retired()`); a plain task
may run on a recoverable one (see `ToolRegistry.implementation`). The implementation must
also have the method the attempt calls (`recover`, `resume`, `adopt`). When nothing
registered fits, the attempt runs nothing and says what to register.
"""

from __future__ import annotations

from typing import Literal

from scope_temporal.background.tool import BackgroundTool
from scope_temporal.interaction.task_values import AttemptPlan
from scope_temporal.tools.registry import ToolRegistry
from scope_temporal.tools.spec import BackgroundSpec

_Layer = Literal["recover", "resume", "adopt"]


def serving_tool(
    tools: ToolRegistry, plan: AttemptPlan, *, recovering: bool
) -> BackgroundTool | str:
    """The implementation that runs this attempt, or why none can (for the task's error).

    Args:
        recovering: the attempt recovers from its previous try's checkpoint (`recover`,
            whatever the plan's mode).
    """
    capability = plan.capability
    if capability is None:  # planned before tasks recorded their class: today's tool
        found = tools.get(plan.tool)
    else:
        found = tools.implementation(plan.tool, capability)
    if not isinstance(found, BackgroundTool):
        return _unregistered(tools, plan)
    layer: _Layer | None = "recover" if recovering else _LAYER_OF_MODE.get(plan.mode)
    if layer is not None and not _has(found.settings, layer):
        kind = found.settings.capability
        wanted = capability or ("recoverable" if layer == "recover" else kind)
        fix = (
            f"register its former {wanted} implementation for it: tools=[..., Former.retired()]"
            if wanted != kind
            else f"register an implementation of {plan.tool!r} with {layer}(...)"
        )
        return (
            f"the {kind} implementation of background tool {plan.tool!r} registered on the "
            f"worker that ran the attempt has no {layer}(...), which the attempt needs (the "
            f"task was launched under an implementation that had it): {fix}. Nothing ran "
            "in this attempt."
        )
    return found


_LAYER_OF_MODE: dict[str, _Layer] = {"recover": "recover", "resume": "resume", "adopt": "adopt"}


def _has(settings: BackgroundSpec, layer: _Layer) -> bool:
    if layer == "recover":
        return settings.recoverable
    if layer == "resume":
        return settings.resumable
    return settings.handoff


def _unregistered(tools: ToolRegistry, plan: AttemptPlan) -> str:
    """No implementation of the task's class: what this worker has, and what to add."""
    name, capability = plan.tool, plan.capability
    current = tools.get(name)
    if current is None or current.spec.background is None:
        here = f"no background tool {name!r} is registered there"
    else:
        here = f"that worker registers {name!r} as {current.spec.background.capability}"
    retired = tools.retired(name)
    if retired:
        here += f", retired: {', '.join(retired)}"
    wanted = f"{capability} implementation" if capability else "implementation"
    launched = f"the task was launched as {capability}; " if capability else ""
    return (
        f"no {wanted} of background tool {name!r} is registered on the worker that ran "
        f"the attempt ({here}): {launched}register the implementation it was launched "
        "with on every worker that runs background attempts, beside the tool's current "
        f"one: tools=[..., Former.retired()] (a @background_tool named {name!r}"
        f"{' with recover(...)' if capability == 'recoverable' else ''}). Nothing ran in "
        "this attempt; whether an operation the task started earlier goes on is unknown."
    )


__all__ = ["serving_tool"]

"""How a run of an Interaction starts, on any engine: its machine, and its settings.

A run's settings (`RunSettings`: the Definition's digest, the payload limit, the delegate
Definitions served) are recorded when an Interaction starts (in history, on Temporal)
and carried by continue-as-new; every later decision reads them, never the serving
worker's configuration, so a replay decides as the first run did.
"""

from __future__ import annotations

from scope_temporal import errors
from scope_temporal.definition import Definition
from scope_temporal.errors import ScopeError
from scope_temporal.interaction import rules
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.mcp.binding import bound_definition
from scope_temporal.outputs import Failure
from scope_temporal.payloads import InteractionInput, RunSettings
from scope_temporal.registry import Registry


def open_machine(
    input: InteractionInput, process_id: str, registry: Registry, where: str
) -> InteractionMachine | Failure:
    """The machine of a run: a new Interaction, or the state continue-as-new carried; or
    why it cannot run (its Definition is not served `where`, or changed, or the input is
    invalid)."""
    definition = registry.lookup(input.definition)
    if definition is None:
        return Failure.of(
            errors.DEFINITION_UNKNOWN,
            f"No Definition {input.definition!r} is registered on {where} (known: "
            f"{registry.names}). Register it on the worker.",
        )
    try:
        if input.state is not None:
            return InteractionMachine(definition, input.state)
        state = rules.initial_state(
            definition,
            process_id,
            input.messages,
            input.max_model_calls,
            input.capabilities,
            input.approved_tools,
            run_context=input.context,
            base=input.base,
            instructions_first=input.instructions_first,
        )
        state.options = rules.options_for(definition, input.options)
        machine = InteractionMachine(definition, state)
        for notice in input.notices:  # a session's turn: applied before its first call
            machine.steer(notice.signal_id, notice.messages)
        return machine
    except ScopeError as error:
        return Failure.of(error.code, error.message)


def settings_of(
    definition: Definition, registry: Registry, *, attention: bool = True
) -> RunSettings:
    """The settings a new run of `definition` records, served by `registry`; `attention`:
    the run's status for people covers its tree (see `driver.attention`)."""
    return RunSettings(
        digest=definition.digest,
        payload_limit=registry.payload_limit,
        delegates=tuple(
            d.definition for d in definition.delegates if registry.lookup(d.definition)
        ),
        attention=attention,
    )


def changed_definition(definition: Definition, recorded: RunSettings) -> Failure | None:
    """The failure of a run whose Definition changed since its settings were recorded."""
    if recorded.digest == definition.digest:
        return None
    return Failure.of(
        errors.DEFINITION_CHANGED,
        f"Definition {definition.name!r} changed while this Interaction ran "
        f"(recorded {recorded.digest[:12]}, now {definition.digest[:12]}). Deploy changed "
        "agents as a new pinned build (Worker Versioning), under a new Definition "
        "name, or let old runs finish first (docs/deploy.md).",
    )


def adopt_settings(machine: InteractionMachine, recorded: RunSettings) -> Failure | None:
    """Check the recorded settings against the machine's Definition and bind the MCP
    tool lists they recorded into it (`scope_temporal.mcp.binding`); or why the run
    cannot go on (its Definition changed, or its MCP tools were never listed)."""
    definition = machine.definition
    changed = changed_definition(definition, recorded)
    if changed is not None:
        return changed
    if definition.mcp_servers and recorded.mcp_tools is None:
        return Failure.of(
            errors.MCP_LIST_FAILED,
            f"Definition {definition.name!r} uses MCP servers, but this run's tool lists "
            "were not fetched (only a root Interaction lists them in a LocalRunner).",
        )
    machine.definition = bound_definition(definition, recorded.mcp_tools)
    return None


__all__ = ["adopt_settings", "changed_definition", "open_machine", "settings_of"]

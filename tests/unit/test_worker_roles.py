"""Workers by role and tools routed to a pool: what is checked before anything runs."""

from __future__ import annotations

from typing import Any

import pytest

from scope_temporal import ConfigurationError, Definition, DefinitionError, ScopeWorker, tool
from scope_temporal.routing import routed_tools, unserved_warning


def lookup_tool(**options: Any) -> Any:
    @tool(permission="read", **options)
    def lookup(query: str) -> str:
        """Look something up."""
        return query

    return lookup


def test_routing_a_tool_leaves_the_definitions_digest_as_it_was() -> None:
    # routing is where a tool runs, not what it does: moving it to a pool must not fail
    # running Interactions with interaction.definition.changed
    plain = Definition("d", tools=[lookup_tool()])
    routed = Definition("d", tools=[lookup_tool(task_queue="gpu")])
    assert routed.tools.tools[0].task_queue == "gpu"
    assert routed.digest == plain.digest


@pytest.mark.parametrize("queue", ["", "  ", 7])
def test_a_task_queue_that_names_no_queue_is_refused(queue: Any) -> None:
    with pytest.raises(DefinitionError, match="task_queue must be the name of a task queue"):
        lookup_tool(task_queue=queue)


def test_routed_tools_lists_the_other_queues_and_their_tools() -> None:
    gpu = lookup_tool(task_queue="gpu")

    @tool(permission="read", task_queue="scope")
    def local() -> str:
        """Runs on the Interaction's own queue anyway."""
        return ""

    definitions = [Definition("a", tools=[gpu, local]), Definition("b", tools=[gpu])]
    assert routed_tools(definitions, "scope") == {"gpu": ("lookup",)}
    assert "--role activities --task-queue gpu" in unserved_warning("gpu", ("lookup",))


def test_an_unknown_role_is_refused_with_the_roles_there_are() -> None:
    with pytest.raises(ConfigurationError, match="'all' \\(the default\\), 'workflows' or"):
        ScopeWorker(
            None,  # type: ignore[arg-type]  # refused before the client is used
            definitions=[],
            models={},
            role="tools",  # type: ignore[arg-type]
        )

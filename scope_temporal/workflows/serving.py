"""How a workflow reaches the Registry of the worker running it (inside the workflow).

The worker owns its `Registry`; `RegistryInterceptor` (given to the Temporal `Worker`, or
to a `Replayer`) publishes it to that worker's workflows as an extern function, the SDK's
channel for per-worker values. No module-level state: two workers in one process each
serve their own Definitions.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.worker import Interceptor, WorkflowInboundInterceptor, WorkflowInterceptorClassInput

from scope_temporal.errors import ProtocolError
from scope_temporal.registry import Registry

_EXTERN = "scope_temporal.registry"


class RegistryInterceptor(Interceptor):
    """Makes `registry` what `current()` returns in this worker's workflows."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor] | None:
        registry = self.registry
        input.unsafe_extern_functions[_EXTERN] = lambda: registry
        return None  # nothing to intercept: the extern function is all


def current() -> Registry:
    """The Registry of the worker running the calling workflow.

    Raises:
        ProtocolError: the worker was built without `RegistryInterceptor`.
    """
    found = workflow.extern_functions().get(_EXTERN)
    if found is None:
        raise ProtocolError(
            "This worker serves scope-temporal workflows without their registry; build it "
            "with ScopeWorker (or pass RegistryInterceptor to the Worker or Replayer)."
        )
    registry = found()
    assert isinstance(registry, Registry)
    return registry


__all__ = ["RegistryInterceptor", "current"]

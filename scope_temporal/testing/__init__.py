"""Test kit shipped with the SDK: run agents without Temporal, script models."""

from scope_temporal.models.scripted import ScriptedModel
from scope_temporal.testing.local import LocalRun, LocalRunner

__all__ = ["LocalRun", "LocalRunner", "ScriptedModel"]

"""`@tool` and `@background_tool` take each option once (`ToolOptions`,
`BackgroundToolOptions`): an option left out takes the spec's own default, an unknown one
is refused as any unknown keyword is, and the specs (and so the digests) of tools declared
before are unchanged."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import BaseModel

from scope_temporal import Definition, RunHandle, TaskRun, ToolSet, background_tool, tool
from scope_temporal.background.protocols import Recoverable
from scope_temporal.tools.spec import BackgroundSpec, ToolSpec


def key_of(invocation: object) -> tuple[str | None, bool]:
    return ("k", True)


async def passthrough(call: object, next_: object) -> object:
    return None


@tool(
    name="everything",
    description="told",
    permission="write",
    timeout=2.5,
    concurrency=key_of,
    direct_result=True,
    deferred=True,
    schema={"type": "object", "properties": {"x": {"type": "integer"}}},
    middleware=[passthrough],
    task_queue="gpu",
)
def every_option(x: int) -> int:
    """Ignored: the description is given."""
    return x


@tool
def bare(x: int) -> int:
    """Bare."""
    return x


class ExportArgs(BaseModel):
    table: str


class Exporter:
    """Export a table."""

    async def start(self, task_id: str, arguments: ExportArgs, attempt: int) -> RunHandle:
        async def work(progress: object) -> int:
            return 1

        return TaskRun(work)

    async def recover(
        self, task_id: str, arguments: ExportArgs, attempt: int, checkpoint: object
    ) -> RunHandle:
        return await self.start(task_id, arguments, attempt)


export = background_tool(
    name="export_all",
    description="exports",
    permission="read",
    execution="exclusive",
    concurrency_key="tables",
    deferred=True,
    foreground_timeout=0,
    heartbeat_timeout=timedelta(seconds=3),
    task_timeout=60,
    max_attempts=3,
    auto_background=False,
    notify=False,
)(Exporter)
plain_export = background_tool()(Exporter)


def test_an_option_left_out_takes_the_specs_own_default() -> None:
    assert bare.spec == ToolSpec(name="bare", description="Bare.", parameters=bare.spec.parameters)
    settings = plain_export.settings
    assert isinstance(plain_export.impl, Recoverable)
    defaults = BackgroundSpec()
    assert (settings.foreground_timeout, settings.heartbeat_timeout, settings.task_timeout) == (
        defaults.foreground_timeout,
        defaults.heartbeat_timeout,
        defaults.task_timeout,
    )
    assert settings.max_attempts == 5 and settings.notify and plain_export.auto_background is True


def test_every_option_given_lands_where_it_did() -> None:
    spec = every_option.spec
    assert (spec.name, spec.description, spec.permission) == ("everything", "told", "write")
    assert (spec.timeout, spec.concurrency, spec.direct_result) == (
        timedelta(seconds=2.5),
        key_of,
        True,
    )
    assert (spec.deferred, spec.task_queue, every_option.middleware) == (
        True,
        "gpu",
        (passthrough,),
    )
    assert spec.parameters["properties"] == {"x": {"type": "integer"}}
    settings = export.settings
    assert (settings.foreground_timeout, settings.heartbeat_timeout) == (None, timedelta(seconds=3))
    assert (settings.task_timeout, settings.max_attempts, settings.notify) == (
        timedelta(seconds=60),
        3,
        False,
    )
    assert (export.spec.execution, export.spec.concurrency_key, export.auto_background) == (
        "exclusive",
        "tables",
        False,
    )


def test_an_option_a_decorator_does_not_have_is_refused_as_an_unknown_keyword() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'permision'"):
        tool(permision="read")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="unexpected keyword argument 'direct_result'"):
        background_tool(direct_result=True)  # type: ignore[call-arg]


def test_the_digests_of_tools_declared_before_are_unchanged() -> None:
    definition = Definition("kit", tools=ToolSet("kit", [every_option, bare, export]))
    assert definition.digest == PINNED


PINNED = "bdf6e5ff35d03e3e96a86c45591e558f0afb3b466f50a862e9f33045b019c449"
"""Computed by the decorators as they were before the options were declared once."""

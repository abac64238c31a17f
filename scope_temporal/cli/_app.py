"""Load an app module: the Definitions, tools and models a worker serves.

An app module exposes `definitions`, `tools` and either `models` (a mapping) or a
`build_models()` function; optionally `data_converter` (its payload codec, e.g.
encryption) and `mcp_servers` (how to reach the MCP servers its Definitions name). The
default is the reference app (`workflows`, with its tools in `activities`), loaded from
the project root; the SDK never imports it otherwise.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import click
from temporalio.converter import DataConverter

from scope_temporal.definition import Definition
from scope_temporal.models.protocol import Model

T = TypeVar("T")

REFERENCE_APP = "workflows"
"""Module of the reference app (top-level `workflows/` beside `activities/`)."""


@dataclass(frozen=True)
class App:
    """What a worker serves."""

    module: str
    definitions: list[Definition]
    tools: list[Any]
    models: dict[str, Model]
    prompt: str | None
    """The app's suggested first prompt (`DEMO_PROMPT`), if it has one."""
    data_converter: DataConverter | None = None
    """The app's `data_converter` (e.g. with an encryption codec), if it defines one."""
    mcp_servers: dict[str, Any] = field(default_factory=dict)
    """How the worker reaches the MCP servers the Definitions name (`McpStdio` /
    `McpHttp` by name), if the app defines `mcp_servers`."""

    def model_lines(self) -> list[str]:
        """One line per model: its name and what it is (its `label`, or its type)."""
        return [f"{name}: {describe_model(model)}" for name, model in self.models.items()]


def app_option(help: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """`--app PACKAGE.MODULE` (or `SCOPE_APP`); the command receives `app_module`, None for
    the reference app."""
    return click.option(
        "--app",
        "app_module",
        metavar="PACKAGE.MODULE",
        envvar="SCOPE_APP",
        default=None,
        help=help,
    )


def describe_model(model: Model) -> str:
    label = getattr(model, "label", None)
    return str(label) if label else type(model).__name__


def project_root(start: Path | None = None) -> Path | None:
    """The folder holding the reference app: the working directory or one of its parents,
    else the source checkout this package is installed from (an editable install)."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if _holds_reference_app(folder):
            return folder
    checkout = Path(__file__).resolve().parents[2]
    return checkout if _holds_reference_app(checkout) else None


def _holds_reference_app(folder: Path) -> bool:
    return (folder / "workflows" / "__init__.py").is_file() and (
        folder / "activities" / "__init__.py"
    ).is_file()


def load_app(module_name: str | None = None) -> App:
    """Import an app module and collect what it serves.

    The working directory is importable; for the reference app the project root is too.

    Raises:
        click.ClickException: the module cannot be imported or lacks what a worker needs.
    """
    name = module_name or REFERENCE_APP
    _importable(Path.cwd())
    if module_name is None:
        root = project_root()
        if root is None:
            raise click.ClickException(
                "the reference app (workflows/ and activities/) was not found here or in a "
                "parent folder; run from the scope-temporal checkout or pass --app my.module"
            )
        _importable(root)
    return _collect(import_module(name, "the app module"))


def import_module(name: str, what: str) -> ModuleType:
    """Import `name` with the working directory importable.

    Raises:
        click.ClickException: it cannot be imported (with what to do about it).
    """
    _importable(Path.cwd())
    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise click.ClickException(
            f"cannot import {what} {name!r}: {error}. Run from your project's root "
            "folder or make the module importable (PYTHONPATH)."
        ) from None


def app_data_converter(
    module: ModuleType, attribute: str = "data_converter"
) -> DataConverter | None:
    """`module.<attribute>` as a DataConverter (called first if it is a function); None
    if the module does not define it.

    Raises:
        click.ClickException: it is defined but is not a DataConverter.
    """
    value = getattr(module, attribute, None)
    if value is None:
        return None
    if callable(value) and not isinstance(value, DataConverter):
        value = value()
    if not isinstance(value, DataConverter):
        raise click.ClickException(
            f"{module.__name__}.{attribute} is a {type(value).__name__}, "
            "not a temporalio.converter.DataConverter"
        )
    return value


def _importable(folder: Path) -> None:
    entry = str(folder)
    if entry not in sys.path:
        sys.path.insert(0, entry)


def _collect(module: ModuleType) -> App:
    name = module.__name__
    definitions = list(getattr(module, "definitions", None) or ())
    if not definitions or not all(isinstance(d, Definition) for d in definitions):
        raise click.ClickException(
            f"app module {name!r} must define `definitions`: a list of scope_temporal.Definition"
        )
    models: Any = getattr(module, "models", None)
    if models is None and callable(getattr(module, "build_models", None)):
        models = module.build_models()
    if not isinstance(models, Mapping) or not models:
        raise click.ClickException(
            f"app module {name!r} must define `models` (a dict name -> Model) or "
            "`build_models()` returning one"
        )
    prompt = getattr(module, "DEMO_PROMPT", None)
    return App(
        module=name,
        definitions=definitions,
        tools=list(getattr(module, "tools", None) or ()),
        models=dict(models),
        prompt=prompt if isinstance(prompt, str) else None,
        data_converter=app_data_converter(module),
        mcp_servers=dict(getattr(module, "mcp_servers", None) or {}),
    )


__all__ = [
    "REFERENCE_APP",
    "App",
    "app_data_converter",
    "app_option",
    "describe_model",
    "import_module",
    "load_app",
    "project_root",
]

"""Load the app's data converter (e.g. one carrying an encryption codec) for the CLI.

Every command that talks to Temporal takes `--data-converter MODULE:NAME` (or
`SCOPE_DATA_CONVERTER`): NAME is a `temporalio.converter.DataConverter`, or a function
returning one, in an importable module. `worker --app` and `demo` also use the app
module's own `data_converter`, if it defines one.
"""

from __future__ import annotations

import click
from temporalio.converter import DataConverter

from scope_temporal.cli._app import app_data_converter, import_module
from scope_temporal.converter import is_decode_failure

APP_ATTRIBUTE = "data_converter"
"""The attribute of an app module (or of `--data-converter MODULE`) holding its converter."""

DECODE_HINT = (
    "the Interaction's payloads are encoded with a codec this command does not have "
    "(e.g. encryption): pass --data-converter MODULE:NAME or set SCOPE_DATA_CONVERTER to "
    "the converter your workers use"
)


def load_data_converter(spec: str) -> DataConverter:
    """The converter `spec` (`module` or `module:name`) names.

    Raises:
        click.ClickException: the module cannot be imported, or the name holds no
            `DataConverter` (nor a function returning one).
    """
    module_name, _, attribute = spec.partition(":")
    module = import_module(module_name, "the --data-converter module")
    found = app_data_converter(module, attribute or APP_ATTRIBUTE)
    if found is None:
        raise click.ClickException(
            f"{module_name!r} has no {attribute or APP_ATTRIBUTE!r}: --data-converter takes "
            "MODULE:NAME where NAME is a temporalio DataConverter or a function returning one"
        )
    return found


__all__ = ["APP_ATTRIBUTE", "DECODE_HINT", "is_decode_failure", "load_data_converter"]

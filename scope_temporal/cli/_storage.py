"""`--storage`: where the CLI's worker and commands keep payloads too large for history.

By default a directory of the project, `.scope/payloads` (beside `scope-temporal dev`'s
`.scope/temporal.db`): a worker and the commands started in the same directory on one
machine share it, so a long Interaction carries its state through it instead of growing
its history toward Temporal's limits. `none` keeps every payload in history. On a
cluster give the workers and the commands one shared store: a directory every machine
mounts, or the app's `data_converter` carrying an object-store driver (e.g.
`temporalio.contrib.aws.s3driver.S3StorageDriver`, see docs/deploy.md), which wins over
this option.
"""

from __future__ import annotations

from pathlib import Path

import click
from temporalio.converter import StorageDriver

from scope_temporal.storage import DirectoryStorage

DEFAULT_STORAGE = Path(".scope/payloads")

STORAGE_OPTION = click.option(
    "--storage",
    "storage",
    envvar="SCOPE_STORAGE",
    default=str(DEFAULT_STORAGE),
    show_default=True,
    metavar="DIR|none",
    help="Directory keeping payloads over 256 KiB (a long Interaction's state), shared by "
    "the worker and the commands; `none`: keep them in history [env SCOPE_STORAGE].",
)


def storage_driver(spec: str) -> StorageDriver | None:
    """The driver `--storage` names: a `DirectoryStorage`, or None for `none`.

    Raises:
        click.BadParameter: `spec` names an existing file, or an object-store URL (those
            are configured in Python, in the app's `data_converter`).
    """
    if spec.strip().lower() == "none":
        return None
    if "://" in spec:
        raise click.BadParameter(
            f"{spec!r} is not a directory: configure an object store (S3, GCS) in your "
            "app's data_converter (see docs/deploy.md), or give a directory",
            param_hint="--storage",
        )
    path = Path(spec)
    if path.exists() and not path.is_dir():
        raise click.BadParameter(f"{spec!r} is a file, not a directory", param_hint="--storage")
    return DirectoryStorage(path)


__all__ = ["DEFAULT_STORAGE", "STORAGE_OPTION", "storage_driver"]

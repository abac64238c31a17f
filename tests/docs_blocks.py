"""The code blocks of docs/: which run where, and how (shared by the unit and live tests).

The convention, for every ```python block of a page of docs/ (the API reference excepted):
- no marker: the block runs in the suite with no external service. The blocks of a page
  run in order in one namespace, like a notebook (a later block sees the names of the
  earlier ones) and may use top-level `await`.
- `<!-- docs: server -->` on the line before the fence: a complete program that needs a
  Temporal server (at `TEMPORAL_ADDRESS`); the live suite runs it against its dev server.
- `<!-- docs: skip: <why> -->`: not run (a fragment, or it needs what the suite has not:
  an API key, a GPU, a cluster); the reason is required.

A block whose first line is `# <name>.py` is that file of the reader's project (the
tutorial's): it is written to the page's folder (`# <name>.py, continued` appends to it),
later blocks import it by name, and the `test_*` functions of a `test_*.py` file are run
as pytest would. The live suite replays the page as the reader would: each file written in
order, a `worker*.py` server block (re)started in the background, every other server block
run to its end.
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import inspect
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
_BLOCK = re.compile(
    r"(?:^<!-- docs: (?P<marker>server|skip: [^>]*\S) -->\n)?^```python\n(?P<code>.*?)^```",
    re.S | re.M,
)
_MARKER = re.compile(r"<!-- docs:[^>]*-->")

Mode = Literal["offline", "server", "skip"]


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    mode: Mode
    code: str

    @property
    def where(self) -> str:
        page = self.page.relative_to(REPO) if self.page.is_relative_to(REPO) else self.page
        return f"{page}:{self.line}"


def pages() -> list[Path]:
    """Every page of docs/ whose blocks are checked (the generated API reference is not)."""
    return sorted(p for p in DOCS.rglob("*.md") if "reference" not in p.parts)


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for match in _BLOCK.finditer(text):
        marker = match.group("marker") or ""
        mode: Mode = "server" if marker == "server" else "skip" if marker else "offline"
        line = text.count("\n", 0, match.start("code"))
        found.append(Block(page, line, mode, match.group("code")))
    return found


def stray_markers(page: Path) -> list[str]:
    """Markers that do not sit right before a python fence (a typo would skip silently)."""
    text = page.read_text()
    placed = {m.start() for m in _BLOCK.finditer(text) if m.group("marker")}
    return [m.group(0) for m in _MARKER.finditer(text) if m.start() not in placed]


_FILE = re.compile(r"# (?P<name>[\w-]+\.py)(?P<continued>, continued)?\n")


def file_of(block: Block) -> tuple[str, bool] | None:
    """(file name, whether it continues the file) of a project-file block, else None."""
    match = _FILE.match(block.code)
    return (match.group("name"), bool(match.group("continued"))) if match else None


def write_file(block: Block, folder: Path) -> Path:
    """Write (or append) the project file `block` holds into `folder`."""
    named = file_of(block)
    assert named is not None, block.where
    target = folder / named[0]
    previous = target.read_text() if named[1] and target.exists() else ""
    target.write_text(previous + block.code)
    return target


async def _run_tests(module: object) -> None:
    for name, function in vars(module).items():
        if name.startswith("test_") and callable(function):
            if inspect.iscoroutinefunction(function):
                await function()
            else:  # a sync test may call asyncio.run: give it a thread without a loop
                await asyncio.to_thread(function)


async def run_page(page: Path, folder: Path) -> dict[str, object]:
    """Run the offline blocks of `page` in order, the loose ones in one namespace and the
    project files in `folder` (on sys.path meanwhile); return the namespace."""
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem.replace('-', '_')}"}
    files: set[str] = set()
    sys.path.insert(0, str(folder))
    try:
        for block in blocks(page):
            if file_of(block) is not None:
                stem = write_file(block, folder).stem
                files.add(stem)
                if block.mode != "offline":
                    continue
                for name in files:  # a file imports the current version of the others
                    sys.modules.pop(name, None)
                module = importlib.import_module(stem)
                if stem.startswith("test_"):
                    await _run_tests(module)
                continue
            if block.mode != "offline":
                continue
            flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
            result = eval(compile(block.code, block.where, "exec", flags=flags), namespace)
            if result is not None:  # a block with top-level await compiles to a coroutine
                await result
    finally:
        sys.path.remove(str(folder))
        for name in files:
            sys.modules.pop(name, None)
    return namespace

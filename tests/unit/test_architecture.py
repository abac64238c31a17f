"""The SDK's shape: imports run down the layers only, no import circles, small modules.

Layers, bottom first (a module may import its own layer and the ones below):

    values      errors, chat, ids, names, ...: plain values every part shares
    authoring   tools/, models/, what a background tool implements: what users write
    definition  Definitions, their approval policies, and the Registry of what a
                worker serves
    core        interaction/: the pure state machines (never call out)
    protocol    the payloads crossing Temporal, host settlements, task-tool envelopes
    driver      driver/: the one driver of each machine, for any engine (no Temporal)
    sides       workflows/ (deterministic) and the activity side: activities/, the
                background tools' runtime, task access (never import each other);
                telemetry/, the hooks of both
    shell       worker, client, testing/: what assembles the sides
    cli         the command line
    face        the package's face: `scope_temporal` re-exports the public names

Some parts must never meet whatever their layers (`NEVER`). Every import counts: module
level, inside functions, and under TYPE_CHECKING. Modules stay under 400 lines of code
(docstrings, comments and blank lines do not count: prose is never cut to fit), test files
under 600 lines.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterator
from pathlib import Path

import scope_temporal

PACKAGE = Path(scope_temporal.__file__).parent
MAX_LINES = 400
MAX_TEST_LINES = 600

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "values",
        (
            "errors",
            "chat",
            "ids",
            "names",
            "frozen",
            "payload_limits",
            "observers",
            "outputs",
            "context_refs",
            "code_digest",
            "run_context",
            "wire",
        ),
    ),
    (
        "authoring",
        (
            "tools",
            "models",
            "background.protocols",
            "background.progress",
            "background.handle",
            "background.materializer",
            "mcp.values",
            "mcp.session_values",
        ),
    ),
    ("definition", ("approval", "delegates", "definition", "registry", "mcp.binding")),
    ("core", ("interaction",)),
    ("protocol", ("payloads", "settle", "background.envelopes")),
    ("driver", ("driver",)),
    (
        "sides",
        ("workflows", "activities", "background", "tasks", "update_retry", "telemetry", "mcp"),
    ),
    (
        "shell",
        (
            "worker",
            "client",
            "tree",
            "converter",
            "storage",
            "loop_watch",
            "sizing",
            "versioning",
            "server_version",
            "routing",
            "testing",
        ),
    ),
    ("cli", ("cli",)),
)
FACES = frozenset(
    {
        # package __init__ modules that only hand names on: they may import any layer,
        # and nothing inside the SDK imports them (it imports the module itself)
        "scope_temporal",
        "scope_temporal.background",
        "scope_temporal.events",
        "scope_temporal.models",
        "scope_temporal.snapshots",
        "scope_temporal.testing",
        "scope_temporal.tools",
        "scope_temporal.mcp",
    }
)
WORKFLOW_SIDE = ("workflows",)
ACTIVITY_SIDE = (
    "activities",
    "background.attempts",
    "background.foreground",
    "background.observe",
    "background.runtime",
    "background.serving",
    "background.task_tools",
    "background.tool",
    "mcp.connections",
    "mcp.listing",
    "mcp.calls",
)
NEVER: tuple[tuple[tuple[str, ...], tuple[str, ...], str], ...] = (
    (
        WORKFLOW_SIDE,
        ACTIVITY_SIDE,
        "workflow code is deterministic; the activity side does I/O",
    ),
    (ACTIVITY_SIDE, WORKFLOW_SIDE, "an activity runs no workflow code"),
    (
        ("interaction", "definition", "delegates", "registry"),
        ("background",),
        "the core and the declarations know background tools only as values "
        "(tools.outcome, tools.task_specs); any module of background/ loads its package, "
        "and with it the activity side",
    ),
)


def modules() -> dict[str, Path]:
    """Every module of the SDK by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _owner(name: str, known: dict[str, Path]) -> str | None:
    """The SDK module that `name` (a module, or a name inside one) lives in."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports(module: str, known: dict[str, Path], source: str | None = None) -> set[str]:
    """The SDK modules `module` imports anywhere in its code (or in `source`, if given)."""
    tree = ast.parse(known[module].read_text() if source is None else source)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, f"{module}: relative import"
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            owner = _owner(name, known)
            if owner is not None and owner != module:
                found.add(owner)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, known) for name in known}


def layer_of(module: str) -> int | None:
    """Index of the module's layer: the longest matching prefix wins."""
    relative = module.removeprefix("scope_temporal.")
    best: tuple[int, int] | None = None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            matches = relative == prefix or relative.startswith(prefix + ".")
            if matches and (best is None or len(prefix) > best[0]):
                best = (len(prefix), index)
    return None if best is None else best[1]


def on(module: str, group: tuple[str, ...]) -> bool:
    relative = module.removeprefix("scope_temporal.")
    return any(relative == g or relative.startswith(g + ".") for g in group)


def test_every_module_has_a_layer() -> None:
    unplaced = [m for m in modules() if m not in FACES and layer_of(m) is None]
    assert unplaced == [], "place each new module in LAYERS"


def test_no_import_runs_up_the_layers() -> None:
    upward: list[str] = []
    for module, targets in graph().items():
        if module in FACES:
            continue
        for target in sorted(targets):
            if target in FACES:
                upward.append(f"{module} -> {target} (a face: import the module itself)")
                continue
            mine, theirs = layer_of(module), layer_of(target)
            assert mine is not None and theirs is not None
            if theirs > mine:
                upward.append(f"{module} ({LAYERS[mine][0]}) -> {target} ({LAYERS[theirs][0]})")
    assert upward == []


def test_the_parts_that_must_never_meet_do_not() -> None:
    crossing = [
        f"{module} -> {target}: {why}"
        for module, targets in graph().items()
        for target in sorted(targets)
        for sources, sinks, why in NEVER
        if on(module, sources) and on(target, sinks)
    ]
    assert crossing == []


FEEDING = frozenset(
    {"next_effects", "next_attempt", "on_model", "on_call", "on_outcome", "on_report"}
)
"""What feeds a machine its effects' settlements: only the drivers may."""


def test_only_the_drivers_feed_the_machines() -> None:
    # one driver per machine: a workflow or LocalRunner that fed a machine itself would
    # be a second driver, with rules of its own
    feeding: list[str] = []
    for module, path in modules().items():
        if on(module, ("interaction", "driver")):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in FEEDING:
                feeding.append(f"{module}:{node.lineno} .{node.attr}")
    assert feeding == []


def _circles(edges: dict[str, set[str]]) -> Iterator[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()

    def visit(node: str) -> Iterator[list[str]]:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                yield from visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                yield sorted(component)

    for node in sorted(edges):
        if node not in index:
            yield from visit(node)


def test_no_import_circles() -> None:
    assert list(_circles(graph())) == []


AROUND = ("bench", "workflows", "activities", "tools")
"""The repository's Python outside the SDK: the benchmarks, the reference app, the scripts."""


def test_no_import_circles_around_the_sdk_either() -> None:
    root = PACKAGE.parent
    known = {
        ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): path
        for folder in AROUND
        for path in sorted((root / folder).rglob("*.py"))
    }
    assert "bench.run" in known and "bench.limits" in known
    assert list(_circles({name: imports(name, known) for name in known})) == []


def test_the_circle_finder_finds_circles() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert list(_circles(edges)) == [["a", "b", "c"]]


def test_the_import_scanner_sees_imports_in_functions_and_under_type_checking() -> None:
    known = modules()
    # the foreground attempt's protocol is found at module level
    assert "scope_temporal.background.foreground" in imports(
        "scope_temporal.background.tool", known
    )
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from scope_temporal.worker import ScopeWorker\n"
        "def f():\n    from scope_temporal import client\n"
    )
    assert imports("scope_temporal.ids", known, source) == {
        "scope_temporal.worker",
        "scope_temporal.client",
    }


def _docstring_lines(tree: ast.Module) -> set[int]:
    """The lines of every string that stands alone as a statement (docstrings of modules,
    classes and functions, and the attribute docstrings under assignments)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


_NOT_CODE = frozenset(
    {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENDMARKER,
    }
)


def code_lines(source: str) -> int:
    """How many lines of `source` hold code: prose (docstrings, comments) and blank lines
    do not count, so the size rule never asks for a contract to be said in fewer words."""
    prose = _docstring_lines(ast.parse(source))
    code: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in _NOT_CODE:
            continue
        code.update(line for line in range(token.start[0], token.end[0] + 1) if line not in prose)
    return len(code)


def test_code_lines_leave_out_docstrings_comments_and_blank_lines() -> None:
    source = (
        '"""A module docstring\n\nof three lines."""\n'
        "\n"
        "# a comment\n"
        "X = 1  # code with a comment\n"
        '"""The attribute docstring of X."""\n'
        "\n"
        "def f(\n    a: int,\n) -> str:\n"
        '    """What f does."""\n'
        '    return """a string\nthat is code"""\n'
    )
    # X = 1; the three lines of f's signature; the two lines of the returned string
    assert code_lines(source) == 6


def test_modules_stay_under_the_line_cap() -> None:
    counted = {
        str(path.relative_to(PACKAGE.parent)): code_lines(path.read_text())
        for path in modules().values()
    }
    over = {path: lines for path, lines in counted.items() if lines > MAX_LINES}
    assert over == {}, f"split these by what they do (at most {MAX_LINES} lines of code each)"


def test_test_files_stay_under_their_cap() -> None:
    tests = PACKAGE.parent / "tests"
    over = {
        str(path.relative_to(tests.parent)): len(path.read_text().splitlines())
        for path in sorted(tests.rglob("*.py"))
        if len(path.read_text().splitlines()) > MAX_TEST_LINES
    }
    assert over == {}, f"split these by rule group (at most {MAX_TEST_LINES} lines each)"

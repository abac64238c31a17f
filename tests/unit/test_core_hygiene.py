"""The pure core stays pure, and every failure code the SDK emits is declared."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import scope_temporal
import scope_temporal.driver
import scope_temporal.interaction
from scope_temporal.errors import CODE_KINDS

FORBIDDEN = {"temporalio", "time", "random", "socket", "asyncio", "threading"}
CODE = re.compile(r"(?:interaction|tool)\.[a-z_]+(?:\.[a-z_]+)*")
PACKAGE_ROOT = Path(scope_temporal.__file__).parent


def imported_modules(tree: ast.AST) -> set[str]:
    """Top-level names of every module imported anywhere in the tree (functions included)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and getattr(node.func, "attr", getattr(node.func, "id", ""))
            in (
                "import_module",
                "__import__",
            )
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value.split(".")[0])
    return found


def interaction_modules() -> list[str]:
    return sorted(
        info.name
        for info in pkgutil.iter_modules(
            scope_temporal.interaction.__path__, "scope_temporal.interaction."
        )
    )


def test_core_interaction_modules_import_no_clock_io_randomness_or_temporal() -> None:
    names = interaction_modules()
    assert {"scope_temporal.interaction.machine", "scope_temporal.interaction.tool_call"} <= set(
        names
    )
    offenders: dict[str, set[str]] = {}
    for name in names:
        module = importlib.import_module(name)
        assert module.__file__ is not None
        tree = ast.parse(Path(module.__file__).read_text(), filename=module.__file__)
        bad = imported_modules(tree) & FORBIDDEN
        if bad:
            offenders[name] = bad
    assert offenders == {}


def test_the_drivers_are_engine_agnostic() -> None:
    # the drivers run inside Temporal workflows and in LocalRunner alike: asyncio, but
    # no Temporal, no clock, no randomness, no I/O of their own
    names = sorted(
        info.name
        for info in pkgutil.iter_modules(scope_temporal.driver.__path__, "scope_temporal.driver.")
    )
    assert "scope_temporal.driver.interaction" in names
    offenders: dict[str, set[str]] = {}
    for name in names:
        module = importlib.import_module(name)
        assert module.__file__ is not None
        tree = ast.parse(Path(module.__file__).read_text(), filename=module.__file__)
        bad = imported_modules(tree) & (FORBIDDEN - {"asyncio"})
        if bad:
            offenders[name] = bad
    assert offenders == {}


def test_core_hygiene_scanner_sees_imports_inside_functions() -> None:
    tree = ast.parse(
        "def f():\n    import time\n    from asyncio import sleep\n"
        "    importlib.import_module('random')\nimport temporalio.workflow\n"
    )
    assert {"time", "asyncio", "random", "temporalio"} <= imported_modules(tree)


def code_literals() -> dict[str, set[str]]:
    """Every string literal in the SDK that is exactly a code (`interaction.x`, `tool.x.y`)."""
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        inside_fstrings = {
            id(part)
            for node in ast.walk(tree)
            if isinstance(node, ast.JoinedStr)
            for part in node.values
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in inside_fstrings
                and CODE.fullmatch(node.value)
            ):
                found.setdefault(node.value, set()).add(str(path.relative_to(PACKAGE_ROOT)))
    return found


def test_core_every_failure_code_in_the_source_is_declared() -> None:
    found = code_literals()
    # the scanner works: it finds the declarations themselves
    assert set(CODE_KINDS) <= set(found)
    undeclared = {code: files for code, files in found.items() if code not in CODE_KINDS}
    assert undeclared == {}


def test_core_codes_used_in_keyword_arguments_are_declared() -> None:
    """`code="..."` / `Failure.of("...")` with a literal anywhere must use a declared code."""
    used: set[str] = set()
    for path in PACKAGE_ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            for keyword in node.keywords:
                if keyword.arg == "code" and isinstance(keyword.value, ast.Constant):
                    used.add(str(keyword.value.value))
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "of"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                used.add(str(node.args[0].value))
    assert used - set(CODE_KINDS) == set()


def test_workflow_side_modules_load_neither_openai_nor_jsonschema_eagerly() -> None:
    import subprocess
    import sys

    probe = (
        "import sys; import scope_temporal.workflows.interaction, "
        "scope_temporal.workflows.tool_call; "
        "print(sorted(m for m in ('openai', 'jsonschema') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def _top_level_names(tree: ast.Module) -> tuple[set[str], list[str]]:
    """(the module's __all__, every name its top level defines)."""
    exported: set[str] = set()
    defined: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            defined.append(node.name)
        elif isinstance(node, ast.Assign):
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if targets == ["__all__"] and isinstance(node.value, ast.List | ast.Tuple):
                exported = {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
            defined += targets
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            defined.append(node.target.id)
    return exported, [n for n in defined if not n.startswith("__")]


def test_no_module_defines_a_name_nothing_uses() -> None:
    """Dead code: a name defined at a module's top level is exported, used later in its
    module, or used by another module of the SDK, the tests, the bench or the reference
    app."""
    repo = PACKAGE_ROOT.parent
    sources = {
        path: path.read_text()
        for folder in ("scope_temporal", "tests", "bench", "workflows", "activities")
        for path in (repo / folder).rglob("*.py")
    }
    words: dict[str, set[Path]] = {}
    for path, text in sources.items():
        for word in set(re.findall(r"[A-Za-z_]\w*", text)):
            words.setdefault(word, set()).add(path)
    dead: list[str] = []
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        text = sources[path]
        exported, defined = _top_level_names(ast.parse(text))
        for name in defined:
            used_here = len(re.findall(rf"\b{re.escape(name)}\b", text)) > 1
            used_elsewhere = bool(words.get(name, set()) - {path})
            if name not in exported and not used_here and not used_elsewhere:
                dead.append(f"{path.relative_to(repo)}: {name}")
    assert dead == []

"""A completion validator's code is part of its Definition's digest: a changed body is
detected on replay like any other change, and the same code gives the same digest in
every process (no memory addresses, no per-process string hashing)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from scope_temporal import CompletionDecision, Definition
from scope_temporal.code_digest import code_fingerprint
from scope_temporal.outputs import CompletionCandidate

VALIDATOR = '''
from scope_temporal import CompletionDecision

REQUIRED = {"root cause", "fix"}


def check(candidate):
    """Accept a reply naming the root cause."""
    text = candidate.output.model_response.message.text or ""
    if "root cause" in text and len(text.split()) >= WORDS:
        return CompletionDecision.accept()
    return CompletionDecision.reject("Name the root cause.")


def agent():
    from scope_temporal import Definition

    return Definition("agent", completion_validator=check)
'''


def load(folder: Path, source: str) -> ModuleType:
    """Import `source` as module `validators` from its own file (as a deploy would)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "validators.py"
    path.write_text(textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location("validators", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def digest(module: ModuleType) -> str:
    definition: Definition = module.agent()
    return definition.digest


def test_two_definitions_differing_only_in_the_validator_body_differ(tmp_path: Path) -> None:
    before = load(tmp_path / "v1", VALIDATOR.replace("WORDS", "3"))
    after = load(tmp_path / "v2", VALIDATOR.replace("WORDS", "4"))
    assert before.check.__qualname__ == after.check.__qualname__ == "check"
    assert digest(before) != digest(after)


def test_the_same_code_keeps_its_digest_wherever_it_sits_and_however_it_is_commented(
    tmp_path: Path,
) -> None:
    original = load(tmp_path / "v1", VALIDATOR.replace("WORDS", "3"))
    moved = (
        VALIDATOR.replace("WORDS", "3")
        .replace(
            "def check(candidate):",
            "# moved down and commented\n\n\ndef check(candidate):  # the validator",
        )
        .replace('if "root cause"', '# the model must say it\n    if "root cause"')
    )
    assert digest(load(tmp_path / "v2", moved)) == digest(original)


def test_the_same_code_gives_the_same_digest_in_other_processes(tmp_path: Path) -> None:
    module = load(tmp_path / "v1", VALIDATOR.replace("WORDS", "3"))
    mine = digest(module)
    # string hashing differs per process (PYTHONHASHSEED): set constants must not matter
    theirs = {_digest_in_subprocess(tmp_path / "v1", seed) for seed in ("1", "2")}
    assert theirs == {mine}


def _digest_in_subprocess(folder: Path, seed: str) -> str:
    program = "import validators; print(validators.agent().digest)"
    done = subprocess.run(
        [sys.executable, "-c", program],
        cwd=folder,
        env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(folder)},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def _needs(words: int) -> Callable[[CompletionCandidate], CompletionDecision]:
    def check(candidate: CompletionCandidate) -> CompletionDecision:
        return CompletionDecision.accept() if words else CompletionDecision.reject("more")

    return check


def test_values_a_validator_closes_over_are_part_of_it() -> None:
    def agent(validator: Callable[[CompletionCandidate], CompletionDecision]) -> str:
        return Definition("agent", completion_validator=validator).digest

    assert agent(_needs(5)) == agent(_needs(5))
    assert agent(_needs(5)) != agent(_needs(6))


BYTECODE_ONLY = """
def check(candidate):
    return "ok" if candidate in {"a", "b", "c"} else ANSWER
"""


def _compiled(answer: str) -> Callable[..., Any]:
    """A validator without source (as in a .pyc-only install): exec'd code."""
    namespace: dict[str, Any] = {"__name__": "validators"}
    exec(compile(BYTECODE_ONLY.replace("ANSWER", repr(answer)), "<generated>", "exec"), namespace)
    check: Callable[..., Any] = namespace["check"]
    return check


def test_without_source_the_compiled_code_counts_per_python_minor_version() -> None:
    first = code_fingerprint(_compiled("no"))
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert first.startswith(f"bytecode-{version}:")
    assert code_fingerprint(_compiled("no")) == first
    assert code_fingerprint(_compiled("nope")) != first
    program = textwrap.dedent(
        """
        from tests.unit.test_validator_digest import _compiled
        from scope_temporal.code_digest import code_fingerprint
        print(code_fingerprint(_compiled("no")))
        """
    )
    root = Path(__file__).resolve().parents[2]
    for seed in ("1", "2"):
        done = subprocess.run(
            [sys.executable, "-c", program],
            cwd=root,
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        )
        assert done.stdout.strip() == first


class _Threshold:
    """A callable object as validator: its class's code and no memory address count."""

    def __call__(self, candidate: CompletionCandidate) -> CompletionDecision:
        return CompletionDecision.accept()


def test_a_callable_object_is_fingerprinted_by_its_class_code_not_its_address() -> None:
    one = Definition("agent", completion_validator=_Threshold())
    other = Definition("agent", completion_validator=_Threshold())
    assert one.digest == other.digest
    entry = one.declaration()["completion_validator"]
    assert entry["name"].endswith("_Threshold")
    assert "0x" not in json.dumps(one.declaration())


def test_code_compiled_under_the_name_of_another_file_counts_by_its_compiled_code(
    tmp_path: Path,
) -> None:
    # e.g. a README's example exec'd under the README's name: the lines there are not its
    # source (inspect.getsource fails to tokenize them), so the compiled code counts
    other = tmp_path / "README.md"
    other.write_text("Some prose (with a bracket that never closes\n" * 10)
    namespace: dict[str, Any] = {"__name__": "validators"}
    exec(compile(BYTECODE_ONLY.replace("ANSWER", repr("no")), str(other), "exec"), namespace)
    assert code_fingerprint(namespace["check"]) == code_fingerprint(_compiled("no"))

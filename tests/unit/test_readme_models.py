"""The sections of docs/models.md stay true: "Run it with a local model" names settings
and commands that exist, and the example of "Model errors an adapter may report" runs as
written, its table matching what the adapter raises (test_models_openai_errors.py)."""

from __future__ import annotations

import re
import shlex
import textwrap
from pathlib import Path

from scope_temporal.cli import cli
from scope_temporal.errors import CODE_KINDS

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "docs" / "models.md").read_text()


def section(heading: str) -> str:
    start = README.index(f"\n{heading}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else None]


LOCAL = section("## Run it with a local model")
ERRORS = section("## Model errors an adapter may report")


def test_the_local_model_commands_parse_against_the_cli() -> None:
    commands = [
        shlex.split(line, comments=True)
        for block in re.findall(r"```bash\n(.*?)```", LOCAL, re.S)
        for line in block.replace("\\\n", " ").splitlines()
    ]
    ours = []
    for words in commands:
        while words and re.match(r"^[A-Z_]+=", words[0]):
            words = words[1:]
        if words and words[0] == "scope-temporal":
            cli.commands[words[1]].make_context(words[1], words[2:])
            ours.append(words[1])
    assert ours == ["demo", "worker", "run"]


def test_the_local_model_settings_are_the_ones_read() -> None:
    app = (REPO / "activities" / "models.py").read_text()
    tests = (REPO / "tests" / "live" / "test_local_model.py").read_text()
    for name in set(re.findall(r"(SCOPE_[A-Z_]+)", LOCAL)):
        assert f'"{name}"' in (tests if name.startswith("SCOPE_TEST_") else app), name


def test_the_error_table_names_declared_codes_and_public_names() -> None:
    import scope_temporal

    codes = set(re.findall(r"`(interaction\.model\.[a-z_]+)`", ERRORS))
    assert codes == {
        "interaction.model.unavailable",
        "interaction.model.rejected",
        "interaction.model.context_overflow",
    }
    assert codes <= set(CODE_KINDS)
    for name in ("ModelUnavailable", "ModelRejected", "ModelContextOverflow", "NotCalled"):
        assert hasattr(scope_temporal, name)


async def test_the_test_kit_example_runs_as_written() -> None:
    [example] = re.findall(r"```python\n(.*?)```", ERRORS, re.S)
    code = "async def readme_example():\n" + textwrap.indent(example, "    ")
    namespace: dict[str, object] = {}
    exec(compile(code, "docs/models.md", "exec"), namespace)
    await namespace["readme_example"]()  # type: ignore[operator]


def test_the_retry_example_spells_out_the_defaults() -> None:
    from scope_temporal import ModelRetry

    loop = section("## What the loop does with each outcome")
    example = re.findall(r"```python\n(.*?)```", loop, re.S)[0]
    namespace: dict[str, object] = {}
    exec(compile(example, "docs/models.md", "exec"), namespace)
    support = namespace["support"]
    assert support.model_retry == ModelRetry()  # type: ignore[attr-defined]
    assert support.fallback_models == ("backup",)  # type: ignore[attr-defined]

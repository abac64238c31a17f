"""The README's "Write a tool and an agent" and "Test your agent" examples run as written."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def block_under(heading: str) -> str:
    section = README[README.index(heading) :]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, heading
    return match.group(1)


async def test_write_a_tool_and_test_it_with_local_runner_as_the_readme_shows() -> None:
    definitions = block_under("## Write a tool and an agent")
    test = block_under("## Test your agent without Temporal")
    # the test snippet uses top-level await, as in a notebook or an async test
    code = definitions + "\nasync def readme_test():\n" + textwrap.indent(test, "    ")
    code += "    return out\n"
    namespace: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), namespace)
    out = await namespace["readme_test"]()  # type: ignore[operator]
    assert out.source == "model_response" and out.model_calls == 2
    assert out.text == "Clean /var/log."

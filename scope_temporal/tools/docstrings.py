"""Read a tool's description and parameter descriptions from its Google-style docstring."""

from __future__ import annotations

import inspect
import re

__all__ = ["parameter_descriptions", "summary"]

_ARGS_HEADERS = frozenset({"args:", "arguments:", "parameters:", "params:"})
_ENTRY = re.compile(r"^\*{0,2}(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*(\([^)]*\))?\s*:\s*(?P<text>.*)$")


def summary(doc: str | None) -> str:
    """The first paragraph of a docstring, its lines joined by single spaces.

    Args:
        doc: A raw docstring (indentation is normalised) or None.

    Returns:
        The summary, or "" when there is no docstring.
    """
    if not doc:
        return ""
    paragraph: list[str] = []
    for line in inspect.cleandoc(doc).splitlines():
        if not line.strip():
            if paragraph:
                break
            continue
        paragraph.append(line.strip())
    return " ".join(paragraph)


def parameter_descriptions(doc: str | None) -> dict[str, str]:
    """The descriptions of an `Args:` section, by parameter name.

    Understands `name: text` and `name (type): text` entries with indented continuation
    lines. The section ends at the first unindented line (`Returns:`, `Raises:`, ...).

    Args:
        doc: A raw docstring or None.

    Returns:
        Parameter name -> description; empty when there is no `Args:` section.
    """
    if not doc:
        return {}
    lines = inspect.cleandoc(doc).splitlines()
    descriptions: dict[str, list[str]] = {}
    in_args = False
    entry_indent: int | None = None
    current: str | None = None
    for line in lines:
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if not in_args:
            in_args = stripped.lower() in _ARGS_HEADERS and indent == 0
            continue
        if not stripped:
            continue
        if indent == 0:
            break
        if entry_indent is None:
            entry_indent = indent
        if indent <= entry_indent and (match := _ENTRY.match(stripped)):
            current = match["name"]
            descriptions[current] = [match["text"].strip()]
        elif current is not None and indent > entry_indent:
            descriptions[current].append(stripped)
        else:
            break
    return {name: " ".join(p for p in parts if p) for name, parts in descriptions.items()}

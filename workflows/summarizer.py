"""`summarizer`: the delegate `ops` hands evidence to. No tools; read-only capabilities."""

from __future__ import annotations

from scope_temporal import Definition

summarizer = Definition(
    "summarizer",
    description="Summarises incident evidence, one line per service.",
    instructions=(
        "You summarise incident evidence. Reply with one line per service: how many errors, "
        "and the most telling message. No preamble."
    ),
    model="default",
    tools=[],
    max_model_calls=3,
    capabilities={"read"},
)

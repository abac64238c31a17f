"""CONFORMANCE 52: sampling options given at start apply to that Interaction's model
calls only, over the Definition's own; options a model cannot take are refused with a
typed error and nothing starts. Through LocalRunner and on the pure core."""

from __future__ import annotations

from typing import Any

import pytest

from scope_temporal import (
    Definition,
    Delegate,
    InvalidOptions,
    Message,
    Options,
    ScriptedModel,
    reply,
)
from scope_temporal.interaction.machine import InteractionMachine
from scope_temporal.interaction.state import InteractionState
from scope_temporal.testing import LocalRunner

WAIT = 2.0


def runner(script: list[Any], child: ScriptedModel | None = None) -> LocalRunner:
    parent = Definition(
        "sampled",
        options=Options(temperature=0.2, max_tokens=100),
        delegates=[Delegate("helper", "Help", definition="child")],
    )
    models = {"default": ScriptedModel(script), "child": child or ScriptedModel([])}
    return LocalRunner(
        definitions=[parent, Definition("child", model="child", options=Options(seed=7))],
        models=models,
    )


def options_sent(local: LocalRunner, model: str = "default") -> list[Options]:
    scripted = local.models[model]
    assert isinstance(scripted, ScriptedModel)
    return [request.options for request in scripted.requests]


async def test_c52_options_at_start_apply_over_the_definitions_to_this_interaction_only() -> None:
    local = runner([reply.text("one"), reply.text("two")])
    first = await local.start(
        "sampled", [Message.user("a")], options=Options(temperature=0.9, top_p=0.5, logprobs=True)
    )
    await first.result(timeout=WAIT)
    second = await local.start("sampled", [Message.user("b")])
    await second.result(timeout=WAIT)
    tuned, plain = options_sent(local)
    assert (tuned.temperature, tuned.max_tokens, tuned.top_p) == (0.9, 100, 0.5)
    assert (tuned.model_extra or {}) == {"logprobs": True}
    assert plain == Options(temperature=0.2, max_tokens=100)


async def test_c52_every_model_call_of_the_interaction_gets_them_and_delegates_keep_their_own() -> (
    None
):
    child = ScriptedModel([reply.text("child done")])
    local = runner([reply.tool_calls(("helper", {"task": "t"})), reply.text("parent done")], child)
    run = await local.start("sampled", [Message.user("go")], options=Options(temperature=1.5))
    await run.result(timeout=WAIT)
    assert [o.temperature for o in options_sent(local)] == [1.5, 1.5]
    assert options_sent(local, "child") == [Options(seed=7)]


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (Options(temperature=2.5), "temperature=2.5"),
        (Options(temperature=-0.1), "temperature=-0.1"),
        (Options(top_p=0.0), "top_p=0.0"),
        (Options(max_tokens=0), "max_tokens=0"),
        (Options(top_p=1.5), "top_p=1.5"),
        (Options(stop=float("nan")), "stop=nan"),
    ],
)
async def test_c52_options_a_model_cannot_take_are_refused_and_nothing_starts(
    options: Options, said: str
) -> None:
    local = runner([reply.text("never")])
    with pytest.raises(InvalidOptions) as refused:
        await local.start("sampled", [Message.user("a")], options=options)
    assert refused.value.code == "interaction.options.invalid"
    assert said in refused.value.message
    assert options_sent(local) == []
    with pytest.raises(InvalidOptions):  # the core refuses them too (a raw workflow start)
        InteractionMachine.start(
            local.registry.lookup("sampled"), "p", [Message.user("a")], options=options
        )  # type: ignore[arg-type]


def test_c52_the_options_survive_continue_as_new_and_older_states_still_load() -> None:
    definition = Definition("sampled", options=Options(temperature=0.2))
    machine = InteractionMachine.start(
        definition, "p", [Message.user("a")], options=Options(max_tokens=5)
    )
    restored = InteractionState.model_validate_json(machine.state.model_dump_json())
    [effect] = InteractionMachine(definition, restored).next_effects()
    assert effect.request.options == Options(temperature=0.2, max_tokens=5)  # type: ignore[union-attr]
    older = machine.state.model_dump(mode="json")
    del older["options"]  # a state carried by continue-as-new before options existed
    [effect] = InteractionMachine(definition, InteractionState.model_validate(older)).next_effects()
    assert effect.request.options == definition.options  # type: ignore[union-attr]

"""The app the telemetry CLI tests serve with `scope-temporal worker --app
tests.live.loud_app`: one tool round, every response with usage. A module (not a string
written to a temporary folder) so the replay test can register its Definition."""

from __future__ import annotations

from scope_temporal import Definition, ModelRequest, Response, ScriptedModel, Usage, reply, tool


@tool(permission="read")
def shout(text: str) -> str:
    """Shout the text."""
    return text.upper()


def plan(request: ModelRequest) -> Response:
    if request.messages[-1].role == "tool":
        response = reply.text("done")
    else:
        response = reply.tool_calls(("shout", {"text": "hi"}))
    return response.model_copy(update={"usage": Usage(input_tokens=7, output_tokens=3)})


definitions = [Definition("loud", tools=[shout])]
tools = [shout]
models = {"default": ScriptedModel(plan)}

"""The app the safe-deploy tests run: what a user's app module looks like to
`scope-temporal worker --app` and `scope-temporal replay-check --app`.

An Interaction of `deploy-agent` asks for an approval (a ToolCall that waits for input),
runs a delegate (`deploy-helper`, with its own ToolCall) and a background task in the same
batch; once approved, it reads a service and runs the delegate again (children started
after the wait), then ends with a reply its completion validator accepts. Payloads are encrypted
(`data_converter`). The tests copy this file into one folder per version of the app, as a
checkout of each version would hold it, and change `require_summary`'s body for the next
version (see `CHANGED_VALIDATOR`).
"""

from __future__ import annotations

from pydantic import BaseModel

from scope_temporal import (
    CompletionCandidate,
    CompletionDecision,
    Definition,
    Delegate,
    ModelRequest,
    Response,
    RunHandle,
    RunProgress,
    ScriptedModel,
    TaskRun,
    background_tool,
    reply,
    require_tool_input,
    tool,
    tool_input_continuation,
)
from scope_temporal.models.protocol import Model
from tests.live import codec_app

APPROVAL = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
BUILD = "v1"
"""Which version of the app this is (the versioning tests serve two); tools report it."""


@tool(permission="write", execution="parallel")
def approve(change: str) -> str:
    """Deploy a change once an operator approves it."""
    if tool_input_continuation() is None:
        require_tool_input(f"Deploy {change}?", APPROVAL, state={"change": change})
    return f"{change} deployed by {BUILD}"


@tool(permission="read")
def look(service: str) -> str:
    """Read a service's state."""
    return f"{service}: healthy ({BUILD})"


class ArchiveArgs(BaseModel):
    name: str


class Archive:
    """Archive the release notes, in the background."""

    async def start(self, task_id: str, arguments: ArchiveArgs, attempt: int) -> RunHandle:
        async def work(progress: RunProgress) -> str:
            progress.publish("archived", data=arguments.name)
            return f"{arguments.name} archived by {BUILD}"

        return TaskRun(work)


archive = background_tool(permission="read")(Archive)


def require_summary(candidate: CompletionCandidate) -> CompletionDecision:
    """Accept a reply that says what was deployed."""
    if "deployed" in candidate.output_text:
        return CompletionDecision.accept()
    return CompletionDecision.reject("Say what was deployed.")


CHANGED_VALIDATOR = (
    'if "deployed" in',
    'if "deployed" in candidate.output_text.lower() or "shipped" in',
)
"""(old, new): the one edit the next version of this app makes, in the validator's body."""

helper = Definition("deploy-helper", tools=[look], max_model_calls=3)
agent = Definition(
    "deploy-agent",
    instructions="Deploy the change with approval; check the service; archive the notes.",
    tools=[approve, look, archive],
    delegates=[Delegate("check", "Check a service", definition="deploy-helper")],
    max_concurrent_tool_calls=3,
    completion_validator=require_summary,
)

definitions = [agent, helper]
tools = [approve, look, archive]
data_converter = codec_app.data_converter


def _script(request: ModelRequest) -> Response:
    results = [r.content for m in request.messages if m.role == "tool" for r in m.tool_results]
    if request.messages[0].text.startswith("Check"):  # the delegate
        if results:
            return reply.text(f"checked: {results[0]}")
        return reply.tool_calls(("look", {"service": "web"}))
    if request.model_call_seq == 1:
        return reply.tool_calls(
            ("approve", {"change": "web-42"}),
            ("check", {"task": "Check web"}),
            ("archive", {"name": "notes-42", "run_in_background": True}),
        )
    if request.model_call_seq == 2:  # after the approval: children started after it
        return reply.tool_calls(("look", {"service": "web-42"}), ("check", {"task": "Check db"}))
    return reply.text(" / ".join(results))


def build_models() -> dict[str, Model]:
    return {"default": ScriptedModel(_script)}

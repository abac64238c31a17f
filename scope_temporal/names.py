"""Every Temporal name scope-temporal uses.

Stable: other-language clients and the UI rely on them.
"""

from __future__ import annotations

from temporalio.common import SearchAttributeKey

INTERACTION_WORKFLOW = "scope.Interaction"
TOOL_CALL_WORKFLOW = "scope.ToolCall"
TASK_WORKFLOW = "scope.BackgroundTask"
"""One background task; its workflow id is the task id."""
SESSION_WORKFLOW = "scope.Session"
"""One conversation of turns; its workflow id is the session id."""

MODEL_ACTIVITY = "scope.model"
TOOL_ACTIVITY = "scope.tool"
RECORD_DIGEST_ACTIVITY = "scope.record_digest"
MCP_LIST_ACTIVITY = "scope.mcp.list"
MCP_SESSION_ACTIVITY = "scope.mcp.session"
MCP_CLOSE_ACTIVITY = "scope.mcp.close"
MCP_SAMPLE_ACTIVITY = "scope.mcp.sample"
"""Local activity recording an Interaction run's settings (named for what it first held)."""
TASK_ATTEMPT_ACTIVITY = "scope.task.attempt"
"""One background attempt (start, recover, resume or adopt a run, then wait for it)."""

STEER = "scope.steer"
TOOL_INPUT = "scope.tool_input"
RESOLVE = "scope.resolve"
UPDATE_AFTER_COMMANDS = "scope.update.after_commands"
"""The error type of an update a workflow refused because it had issued a command earlier
in the same workflow task (`workflows/task_commands.py`); the sender sends it again."""
ATTENTION = "scope.attention"
"""Signal a child Process sends its parent Interaction: what it needs from a person now."""
PAUSE = "scope.pause"
RESUME = "scope.resume"
TASK_CANCEL = "scope.task.cancel"
"""Update on a background task: stop its run."""
TASK_SUBMIT = "scope.task.submit"
"""Update on an Interaction: the host starts a background tool as one of its tasks."""
TASK_REPORT = "scope.task.report"
"""Signal a background attempt sends its own task: progress counts, resume accepted."""

SESSION_SEND = "scope.session.send"
"""Update on a session: one message (it opens a turn, or steers the running one)."""
SESSION_END = "scope.session.end"
"""Update on a session: end it (its running turn is cancelled)."""
SESSION_STEER_TAKEN = "scope.session.steer_taken"
"""Signal a session's turn sends its session: whether it took a steer the session passed
with `reply_to` (a `SteerTaken`)."""
SESSION_NOTICE = "scope.session.notice"
"""Signal a background task of a session's turn sends its session: a lifecycle
notification (a `SteerInput` whose id is the notice id), for the running or next turn."""

SNAPSHOT_QUERY = "scope.snapshot"
TASK_STATUS_QUERY = "scope.task.status"
"""A background task's TaskSnapshot (status, progress, result)."""
TASK_QUESTION_QUERY = "scope.task.question"
"""A background task's open question (a PendingToolInput), or null."""
CONTEXT_QUERY = "scope.context"
"""Messages of the model call in flight, by range (what a worker fetches on a cache miss);
on a session, its transcript."""
SESSION_SNAPSHOT_QUERY = "scope.session.snapshot"
"""A session's SessionSnapshot (its turns, the transcript's length and digest)."""

EVENTS_TOPIC = "scope.events"
"""The topic of a tree's events in its root's stream (Temporal's workflow_streams)."""
STREAM_PUBLISH_SIGNAL = "__temporal_workflow_stream_publish"
"""workflow_streams' own names (fixed by temporalio.contrib.workflow_streams): the signal
that appends a batch to a stream, the update (long poll) and query (immediate) that read
one, the query of its head offset."""
STREAM_POLL = "__temporal_workflow_stream_poll"
STREAM_OFFSET_QUERY = "__temporal_workflow_stream_offset"

DEFAULT_TASK_QUEUE = "scope"

DEFINITION_ATTRIBUTE = SearchAttributeKey.for_keyword("ScopeDefinition")
"""Search attribute: the Definition an Interaction runs."""
STATUS_ATTRIBUTE = SearchAttributeKey.for_keyword("ScopeStatus")
"""Search attribute: an Interaction's status for people, for its whole tree: running |
waiting_input | unknown | paused | completed | failed | canceled."""
SEARCH_ATTRIBUTES = (DEFINITION_ATTRIBUTE, STATUS_ATTRIBUTE)

"""`ScriptedModel`: the deterministic test double and offline demo model.

It plays a script (a list of steps consumed one per call) or delegates to a function,
and records every request it receives, so a test can assert on exactly what the
framework sent to the model.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Awaitable, Callable, Sequence

from scope_temporal.chat import Response
from scope_temporal.models.errors import ScriptExhausted
from scope_temporal.models.protocol import ModelRequest
from scope_temporal.models.streaming import stream_delta

__all__ = ["ResponseFunction", "ScriptedModel", "Step"]

Step = Response | BaseException
"""One scripted call: the Response to return, or an exception instance to raise."""

ResponseFunction = Callable[[ModelRequest], Response | Awaitable[Response]]
"""A function computing the response from the request; sync or async."""


class ScriptedModel:
    """A `Model` that answers from a script or a function.

    Script mode: each call consumes the next step in order. A `Response` step is
    returned; an exception step is raised: most simulate a lost or ambiguous call (the
    framework records the Effect as unknown), while `ModelUnavailable`, `ModelRejected`
    and `ModelContextOverflow` simulate a provider that refused before running it (the
    Interaction retries it after a wait, tries a fallback model, or fails with the code;
    each retry consumes the next step). Calling past the last step raises
    `ScriptExhausted`, itself an exception, so an over-long run surfaces as an unknown
    model Effect rather than an invented answer.

    Function mode: each call returns `function(request)` (awaited when it is awaitable);
    whatever the function raises propagates.

    With `stream_delay`, the text of each answer is also reported word by word through
    `stream_delta`, that many seconds apart, before the answer is returned: what a
    streaming provider looks like to hosts watching live (`scope-temporal run`).

    Attributes:
        requests: every request received, in call order, including calls that raised.
    """

    def __init__(
        self, script: Sequence[Step] | ResponseFunction, *, stream_delay: float | None = None
    ) -> None:
        """Create the model.

        Args:
            script: the steps, or the response function.
            stream_delay: stream each answer's text word by word, this many seconds apart.

        Raises:
            TypeError: a step that is neither a `Response` nor an exception instance.
        """
        self.requests: list[ModelRequest] = []
        self._stream_delay = stream_delay
        self._function: ResponseFunction | None = None
        self._steps: tuple[Step, ...] = ()
        if callable(script):
            self._function = script
            return
        for index, step in enumerate(script):
            if not isinstance(step, Response | BaseException):
                raise TypeError(
                    f"script step {index} must be a Response or an exception instance, "
                    f"got {type(step).__name__}"
                )
        self._steps = tuple(script)

    @property
    def remaining(self) -> int:
        """Steps not consumed yet (always 0 in function mode)."""
        return max(len(self._steps) - len(self.requests), 0) if self._function is None else 0

    async def complete(self, request: ModelRequest) -> Response:
        """Record the request, then answer it with the next step or the function.

        Raises:
            ScriptExhausted: every scripted step was already consumed.
            TypeError: the function returned something other than a Response.
            BaseException: the scripted exception step, or whatever the function raised.
        """
        self.requests.append(request)
        if self._function is not None:
            result = self._function(request)
            answer = await result if inspect.isawaitable(result) else result
            if not isinstance(answer, Response):
                raise TypeError(
                    f"ScriptedModel function returned {type(answer).__name__}, not a Response"
                )
            return await self._streamed(answer)
        call = len(self.requests)
        if call > len(self._steps):
            raise ScriptExhausted(
                f"ScriptedModel script exhausted: model call #{call} "
                f"(model_call_seq={request.model_call_seq}) but only "
                f"{len(self._steps)} step(s) were scripted"
            )
        step = self._steps[call - 1]
        if isinstance(step, BaseException):
            raise step
        return await self._streamed(step)

    async def _streamed(self, answer: Response) -> Response:
        if self._stream_delay is not None:
            for word in re.findall(r"\S+\s*", answer.message.text):
                stream_delta(word)
                await asyncio.sleep(self._stream_delay)
        return answer

"""`ChatCompletionsServer`: a real OpenAI-compatible HTTP server on loopback, for tests.

Nothing is mocked: the server listens on 127.0.0.1, speaks HTTP/1.1 (keep-alive,
chunked server-sent events) and answers `POST .../chat/completions` from a script, so
`OpenAIChatModel` (or any client) runs its real transport against it, in the test
process or in a worker. It can also fail the way real endpoints do: error bodies with
`Retry-After`, a garbled body, a stream cut mid-reply, a request read and never
answered, a connection dropped; `refused_base_url` and `unreachable_base_url` give
endpoints where no connection can be made.

    steps = [reply.text("Hi"), ErrorReply(429, headers={"Retry-After": "1"})]
    with ChatCompletionsServer(steps) as server:
        model = OpenAIChatModel("m", base_url=server.base_url)
        ...
        assert server.received[0].body["messages"] == [...]

The server runs in its own threads, so it works from synchronous and asynchronous tests
alike and never depends on the test's event loop.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self, assert_never

from scope_temporal.chat import Response
from scope_temporal.testing.model_steps import (
    CutStream,
    Drop,
    ErrorReply,
    Hang,
    Paced,
    RawReply,
    RawStream,
    Step,
    completion_body,
    sse_event,
    stream_chunks,
)

__all__ = [
    "ChatCompletionsServer",
    "ReceivedRequest",
    "refused_base_url",
    "unreachable_base_url",
]


@dataclass(frozen=True)
class ReceivedRequest:
    """One request as the server read it."""

    method: str
    path: str
    headers: Mapping[str, str]
    """Header names in lower case."""
    body: Any
    """The decoded JSON body; None when it was empty or not JSON."""

    @property
    def stream(self) -> bool:
        """Whether the client asked for a streamed answer."""
        return isinstance(self.body, dict) and self.body.get("stream") is True


Script = Callable[[ReceivedRequest], Step]
"""Chooses the answer to each request (instead of a list of steps)."""


class ChatCompletionsServer:
    """A chat-completions endpoint on 127.0.0.1 answering from a script.

    Each `POST .../chat/completions` takes the next step of the list (or calls the
    function); a request the script has no step for gets HTTP 500 with an error body
    saying so. Other paths get 404. Every request is recorded in `received`, in arrival
    order, whatever it is answered.

    Attributes:
        received: the requests read so far.
        model: the model name reported when a scripted Response names none.
    """

    def __init__(self, script: Sequence[Step] | Script = (), *, model: str = "loopback") -> None:
        """Create the server (it listens once started: `start()` or `with`).

        Args:
            script: the steps, answered in order, or a function choosing each answer.
            model: the model name reported when a Response names none.
        """
        self._script = script if callable(script) else None
        self._steps: list[Step] = [] if callable(script) else list(script)
        self.model = model
        self.received: list[ReceivedRequest] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._connections: set[socket.socket] = set()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """The API root to give a client, e.g. `http://127.0.0.1:54321/v1`."""
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def push(self, *steps: Step) -> None:
        """Append steps to a list script."""
        if self._script is not None:
            raise TypeError("this server answers with a function, not a list of steps")
        with self._lock:
            self._steps.extend(steps)

    def start(self) -> Self:
        """Listen on an ephemeral port of 127.0.0.1 and serve in a background thread."""
        if self._httpd is not None:
            raise RuntimeError("the server is already started")
        self._closing.clear()
        self._httpd = _Server(("127.0.0.1", 0), _Handler, self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.01,), name="chat-completions-server"
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop: release hanging requests, close every connection, join every thread."""
        if self._httpd is None or self._thread is None:
            return
        self._closing.set()
        self._httpd.shutdown()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:  # unblock handlers waiting on a keep-alive read
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        self._httpd.server_close()
        self._thread.join()
        self._httpd = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _next(self, request: ReceivedRequest) -> Step:
        if self._script is not None:
            return self._script(request)
        with self._lock:
            if self._steps:
                return self._steps.pop(0)
        return ErrorReply(500, f"the test server has no step for request #{len(self.received)}")

    def _track(self, connection: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # so that server_close() joins every handler thread

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        owner: ChatCompletionsServer,
    ) -> None:
        self.owner = owner
        super().__init__(address, handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            with contextlib.suppress(OSError):
                super().finish()
        finally:
            self.server.owner._track(self.connection, add=False)

    def handle(self) -> None:
        # A TLS ClientHello on this plain-HTTP port (an https:// base URL): answer as
        # plain HTTP servers do, which fails the client's TLS handshake.
        with contextlib.suppress(OSError):
            if self.connection.recv(1, socket.MSG_PEEK) == b"\x16":
                self.wfile.write(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
                return
        with contextlib.suppress(OSError):  # the client may give up at any point
            super().handle()

    def do_POST(self) -> None:
        request = self._read()
        owner = self.server.owner
        if request.path.split("?")[0].endswith("/chat/completions"):
            step = owner._next(request)
        else:
            step = ErrorReply(404, f"no route for POST {request.path}")
        self._answer(step, request)

    def do_GET(self) -> None:
        request = self._read()
        self._answer(ErrorReply(404, f"no route for GET {request.path}"), request)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read `received` instead."""

    def _read(self) -> ReceivedRequest:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = ReceivedRequest(
            self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body
        )
        self.server.owner.received.append(request)
        return request

    def _answer(self, step: Step, request: ReceivedRequest) -> None:
        owner = self.server.owner
        body = request.body if isinstance(request.body, dict) else {}
        model = str(body.get("model") or owner.model)
        streamed = body.get("stream") is True
        options = body.get("stream_options")
        usage = isinstance(options, dict) and options.get("include_usage") is True
        if isinstance(step, Response):
            step = Paced(step, 0.0)
        if isinstance(step, Paced | CutStream):
            self._send_response(step, model, streamed=streamed, usage=usage)
        elif isinstance(step, ErrorReply):
            self._send_body(step.status, json.dumps(step.body()), "application/json", step.headers)
        elif isinstance(step, RawReply):
            self._send_body(step.status, step.body, step.content_type, step.headers)
        elif isinstance(step, RawStream):
            events = [sse_event(e) for e in step.events]
            self._send_events(events + ([sse_event("[DONE]")] if step.done else []), 0.0, None)
        elif isinstance(step, Hang):
            owner._closing.wait()
            self.close_connection = True
        elif isinstance(step, Drop):
            self._hang_up()
        else:
            assert_never(step)

    def _send_response(
        self, step: Paced | CutStream, model: str, *, streamed: bool, usage: bool
    ) -> None:
        delay = step.delay if isinstance(step, Paced) else 0.0
        cut = step.after if isinstance(step, CutStream) else None
        if streamed:
            chunks = stream_chunks(step.response, model, include_usage=usage)
            events = [sse_event(c) for c in chunks] + [sse_event("[DONE]")]
            self._send_events(events, delay, cut)
            return
        body = json.dumps(completion_body(step.response, model)).encode()
        time.sleep(delay)
        if cut is None:
            self._send_body(200, body, "application/json", {})
            return
        self._send_head(200, "application/json", {"content-length": str(len(body))})
        self.wfile.write(body[: len(body) // 2])
        self._hang_up()

    def _send_body(
        self, status: int, body: bytes | str, content_type: str, headers: Mapping[str, str]
    ) -> None:
        data = body.encode() if isinstance(body, str) else body
        self._send_head(status, content_type, {**headers, "content-length": str(len(data))})
        self.wfile.write(data)

    def _send_events(self, events: list[bytes], delay: float, cut: int | None) -> None:
        self._send_head(
            200, "text/event-stream", {"transfer-encoding": "chunked", "cache-control": "no-cache"}
        )
        for sent, event in enumerate(events):
            if sent == cut:
                self._hang_up()
                return
            time.sleep(delay)
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def _send_head(self, status: int, content_type: str, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()

    def _hang_up(self) -> None:
        """Close the connection now, whatever is unfinished."""
        self.wfile.flush()
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


@contextlib.contextmanager
def refused_base_url() -> Iterator[str]:
    """A base URL on 127.0.0.1 whose port refuses every connection (bound, not listening)."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{bound.getsockname()[1]}/v1"


@contextlib.contextmanager
def unreachable_base_url() -> Iterator[str]:
    """A base URL on 127.0.0.1 where a connection never completes (it times out).

    A listener whose accept queue is full and which never accepts: Linux then drops
    further connection attempts, as a firewalled or unreachable host does.
    """
    with contextlib.ExitStack() as stack:
        listener = stack.enter_context(socket.socket())
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        address = listener.getsockname()
        for _ in range(16):
            filler = stack.enter_context(socket.socket())
            filler.settimeout(0.2)
            try:
                filler.connect(address)
            except TimeoutError:
                break
        else:
            raise RuntimeError("connections to a full accept queue are not dropped here")
        yield f"http://127.0.0.1:{address[1]}/v1"

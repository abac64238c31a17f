"""A test-owned MCP server, built with the MCP SDK's server API (`python -m
tests.mcp_servers.faulty [--http PORT]`): tools that succeed, return `isError`, raise a
JSON-RPC error, hang, crash the server mid-call, report progress, or ask the client's
user (elicitation: the answer is logged as `elicited` and returned) or model (sampling:
the reply is logged as `sampled` and returned).

Every call is appended to the call log (`MCP_CALL_LOG`, one JSON line, fsynced before
the tool acts), so a test can prove a call reached the server exactly once.
`MCP_VARIANT` makes it offer a bad tool list (`bad_schema`, `duplicate`, `long_name`,
`huge_description`) or a changed one (`changed`: `echo` is gone, `shout` is new);
`MCP_VARIANT_FILE` names a file holding the variant, read at each listing.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

_OBJECT = {"type": "object"}


def _tool(name: str, description: str, properties: dict[str, Any], **hints: Any) -> types.Tool:
    schema = {"type": "object", "properties": properties, "required": sorted(properties)}
    annotations = types.ToolAnnotations(**hints) if hints else None
    return types.Tool(
        name=name, description=description, input_schema=schema, annotations=annotations
    )


def tools(variant: str) -> list[types.Tool]:
    """The tool list this server offers under `variant`."""
    text = {"text": {"type": "string"}}
    listed = [
        _tool("echo", "Echo the text back.", text, read_only_hint=True),
        _tool("add", "Add two integers.", {"a": {"type": "integer"}, "b": {"type": "integer"}}),
        _tool("fail", "Report a tool error (isError).", text),
        _tool("refuse", "Answer with a JSON-RPC error.", text),
        _tool("internal", "Answer with a JSON-RPC internal error.", text),
        _tool("hang", "Never answer.", text),
        _tool("crash", "Kill the server mid-call.", text, destructive_hint=True),
        _tool("big", "Return `size` bytes of text.", {"size": {"type": "integer"}}),
        _tool("sample", "Ask the client's model (sampling).", text),
        _tool("elicit", "Ask the client's user (elicitation).", text),
        _tool(
            "progress",
            "Report `count` progress notifications, `pause` seconds apart.",
            {"count": {"type": "integer"}, "pause": {"type": "number"}},
        ),
        _tool("elicit_twice", "Ask the client's user two questions in a row.", text),
        _tool("sample_twice", "Ask the client's model twice in a row.", text),
        _tool(
            "flaky",
            "Kill the server on the first call (per call log), answer on the next.",
            text,
            idempotent_hint=True,
        ),
        _tool("stall", "Never answer the first call (per call log); answer the next.", text),
    ]
    if variant == "changed":
        listed = [t for t in listed if t.name != "echo"]
        listed.append(_tool("shout", "Echo the text in capitals.", text))
    elif variant == "bad_schema":
        listed.append(
            types.Tool(
                name="broken", input_schema={"type": "object", "properties": {"x": {"type": 5}}}
            )
        )
    elif variant == "duplicate":
        listed.append(_tool("echo", "Echo again.", text))
    elif variant == "long_name":
        listed.append(_tool("x" * 70, "A name too long.", text))
    elif variant == "huge_description":
        listed.append(_tool("verbose", "d" * 10_000_000, text))
    return listed


def _log(name: str, arguments: dict[str, Any]) -> None:
    path = os.environ.get("MCP_CALL_LOG")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as log:
        log.write(json.dumps({"tool": name, "arguments": arguments, "pid": os.getpid()}) + "\n")
        log.flush()
        os.fsync(log.fileno())


def _logged(tool: str) -> int:
    """How many calls of `tool` the call log holds (this one included)."""
    path = os.environ.get("MCP_CALL_LOG")
    if not path or not os.path.exists(path):
        return 0
    with open(path, encoding="utf-8") as log:
        return sum(json.loads(line)["tool"] == tool for line in log)


def _variant() -> str:
    """`MCP_VARIANT`, or the text of the file `MCP_VARIANT_FILE` (read at each listing,
    so a test can change the list of a running server)."""
    path = os.environ.get("MCP_VARIANT_FILE")
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as file:
            return file.read().strip()
    return os.environ.get("MCP_VARIANT", "")


async def _list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=tools(_variant()))


def _text(value: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=value)], is_error=error
    )


async def _call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    from mcp import MCPError

    arguments = dict(params.arguments or {})
    name = params.name
    _log(name, arguments)
    if name in ("echo", "shout"):
        text = str(arguments.get("text", ""))
        return _text(text.upper() if name == "shout" else text)
    if name == "add":
        return _text(str(int(arguments["a"]) + int(arguments["b"])))
    if name == "fail":
        return _text(f"failed on purpose: {arguments.get('text')}", error=True)
    if name == "refuse":
        raise MCPError(code=-32602, message=f"refused on purpose: {arguments.get('text')}")
    if name == "internal":
        raise MCPError(code=-32603, message="internal error on purpose")
    if name == "hang":
        try:
            await anyio.sleep(3600)
        except anyio.get_cancelled_exc_class():  # MCP's notifications/cancelled reached it
            _log("cancelled", arguments)
            raise
    if name == "crash":
        os._exit(3)
    if name == "stall":
        sent = _logged("stall")
        if sent == 1:
            await anyio.sleep(3600)
        return _text(f"stall answered on send {sent}")
    if name == "flaky":
        sent = _logged("flaky")
        if sent == 1:
            os._exit(3)
        return _text(f"flaky answered on send {sent}")
    if name in ("sample", "elicit"):
        return await _ask_client(ctx, name, str(arguments.get("text", "")))
    if name == "sample_twice":
        first = await _ask_client(ctx, "sample", f"{arguments.get('text')} (1)")
        second = await _ask_client(ctx, "sample", f"{arguments.get('text')} (2)")
        return _text(f"{first.content[0].text} | {second.content[0].text}")  # type: ignore[union-attr]
    if name == "elicit_twice":
        first = await _ask_client(ctx, "elicit", "first?")
        second = await _ask_client(ctx, "elicit", "second?")
        return _text(f"{first.content[0].text} | {second.content[0].text}")  # type: ignore[union-attr]
    if name == "progress":
        count, pause = int(arguments["count"]), float(arguments["pause"])
        for step in range(1, count + 1):
            await ctx.session.report_progress(step, count, f"step {step} of {count}")
            await anyio.sleep(pause)
        return _text(f"progressed {count}")
    if name == "big":
        return _text("x" * int(arguments["size"]))
    raise MCPError(code=-32601, message=f"no tool {name!r}")


async def _ask_client(ctx: Any, name: str, text: str) -> types.CallToolResult:
    """Send the client a sampling or elicitation request mid-call; report what came back."""
    try:
        if name == "sample":
            content = types.TextContent(type="text", text=text)
            message = types.SamplingMessage(role="user", content=content)
            sampled = await ctx.session.create_message(
                [message],
                max_tokens=10,
                system_prompt="Answer in one word.",
                related_request_id=ctx.request_id,
            )
            reply = getattr(sampled.content, "text", "")
            _log("sampled", {"text": reply, "model": sampled.model})
            return _text(f"sample answered: {reply}")
        else:
            schema = {
                "type": "object",
                "properties": {"answer": {"type": "string"}},
                "required": ["answer"],
            }
            result = await ctx.session.elicit_form(text, schema, related_request_id=ctx.request_id)
            _log("elicited", {"action": result.action, "content": result.content})
            return _text(f"elicit {result.action}: {json.dumps(result.content)}")
    except Exception as error:
        return _text(f"{name} refused by the client: {error}", error=True)


def server() -> Server[Any]:
    return Server("faulty", on_list_tools=_list_tools, on_call_tool=_call_tool)


async def _stdio() -> None:
    from mcp.server.stdio import stdio_server

    app = server()
    async with stdio_server() as (read, write):
        await app.run(read, write, app.create_initialization_options())


def main(argv: list[str]) -> None:
    if argv[:1] == ["--http"]:
        import uvicorn

        app = server().streamable_http_app(stateless_http=False)
        uvicorn.run(app, host="127.0.0.1", port=int(argv[1]), log_level="warning")
        return
    anyio.run(_stdio)


if __name__ == "__main__":
    main(sys.argv[1:])

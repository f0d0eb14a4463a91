"""Drives the front end at sys.argv[1] as a legacy client: the official Python SDK at a
2025-era release (mcp 1.23.x, MCP 2025-11-25, pinned in hack/clients.sh) over its
streamable-HTTP client. It initializes, lists tools and calls a task-optional tool, a
task-forbidden tool and a task-required tool. Prints one JSON line per finding;
tests/tests/clients.rs reads them.

A 2025-11-25 client knows neither `_meta` envelopes nor the Tasks extension, so every call is
synchronous for it; the task-required tool must fail with an error it can read (a JSON-RPC
error on HTTP 200, not a transport failure).
"""

import json
import sys
from typing import Any

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.exceptions import McpError


def report(step: str, **fields: Any) -> None:
    print(json.dumps({"step": step, **fields}), flush=True)


def text(result: Any) -> str:
    return result.content[0].text if result.content else ""


async def main(url: str) -> None:
    async with streamablehttp_client(url) as (read, write, session_id):
        async with ClientSession(read, write) as session:
            with anyio.fail_after(30):
                init = await session.initialize()
            report(
                "initialized",
                protocolVersion=init.protocolVersion,
                server=init.serverInfo.name,
                capabilities=init.capabilities.model_dump(mode="json", exclude_none=True),
                sessionId=session_id(),
            )

            with anyio.fail_after(30):
                listed = await session.list_tools()
            report("tools", names=sorted(t.name for t in listed.tools))

            # Task-optional: run synchronously, the answer is the tool's result itself.
            with anyio.fail_after(60):
                result = await session.call_tool("slow_compute", {"seconds": 1, "label": "legacy"})
            report("optional", isError=result.isError, text=text(result), structured=result.structuredContent)

            # Task-forbidden: always synchronous.
            with anyio.fail_after(60):
                result = await session.call_tool("greet", {"name": "legacy"})
            report("forbidden", isError=result.isError, text=text(result))

            # Task-required: cannot run for a client without the Tasks extension.
            try:
                with anyio.fail_after(30):
                    result = await session.call_tool("failing_job", {})
                report("required", outcome="result", isError=result.isError, text=text(result))
            except McpError as error:
                report("required", outcome="error", code=error.error.code, message=error.error.message)

            # The session is still usable after the refusal.
            with anyio.fail_after(30):
                listed = await session.list_tools()
            report("after", tools=len(listed.tools))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])

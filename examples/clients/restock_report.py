"""Calls the restock_report tool through an MCP 2026-07-28 server with the Tasks extension, prints
every task status it sees until the result, and optionally cancels the task instead.

    python restock_report.py URL [--token TOKEN] [--threshold N] [--delay-ms MS] [--cancel-after N]
    python restock_report.py URL [--token TOKEN] --tool NAME --arguments JSON

With --tool it calls any tool the same way (say one of an McpServer) with the JSON arguments.

Uses the official Python SDK (`mcp` 2.3): it declares the Tasks extension on every request,
takes the task handle that tools/call returns, polls tasks/get at the pollIntervalMs of the latest
answer (clamped to 100 ms..10 min), and cancels with tasks/cancel.
"""

import argparse
import json
import re
from typing import Any, ClassVar, Literal

import anyio
import httpx2
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Request, RequestParams, Result
from pydantic import ConfigDict, Field

TASKS = "io.modelcontextprotocol/tasks"
RECOUNTED = re.compile(r"recounted (\d+) of")
# Bounds on the server's pollIntervalMs advice, the same as the server's own (McpTool
# spec.pollIntervalMs): a hint below the floor would hammer the server, one above the ceiling
# (or not an integer) would leave the user waiting.
POLL_FLOOR_MS = 100
POLL_CEILING_MS = 600_000
POLL_DEFAULT_MS = 1_000


def poll_delay_seconds(hint_ms: object) -> float:
    """The wait before the next tasks/get: the latest pollIntervalMs, clamped.

    >>> poll_delay_seconds(2000)
    2.0
    >>> poll_delay_seconds(1), poll_delay_seconds(2**31), poll_delay_seconds(None)
    (0.1, 600.0, 1.0)
    >>> poll_delay_seconds(True), poll_delay_seconds("5")
    (1.0, 1.0)
    """
    if not isinstance(hint_ms, int) or isinstance(hint_ms, bool):
        hint_ms = POLL_DEFAULT_MS
    return min(max(hint_ms, POLL_FLOOR_MS), POLL_CEILING_MS) / 1000


class TasksDeclared(ClientExtension):
    """Declares the Tasks extension, so tools/call may answer with a task handle, and claims
    that handle (`resultType: "task"`) so `call_tool(..., allow_claimed=True)` returns it."""

    identifier = TASKS

    def claims(self):
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=self.resolve)]

    async def resolve(self, handle: "TaskHandle", ctx: ClaimContext) -> Any:
        raise RuntimeError("this client follows its tasks itself (allow_claimed=True)")


class TaskParams(RequestParams):
    task_id: str = Field(alias="taskId")


class GetTask(Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskParams
    name_param: ClassVar[str | None] = "taskId"


class CancelTask(Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskParams
    name_param: ClassVar[str | None] = "taskId"


class Task(Result):
    """A task handle, a tasks/get answer, or an ack (all fields absent)."""

    model_config = ConfigDict(extra="allow")
    task_id: str | None = Field(alias="taskId", default=None)
    status: str | None = None
    status_message: str | None = Field(alias="statusMessage", default=None)
    poll_interval_ms: int | None = Field(alias="pollIntervalMs", default=None)
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class TaskHandle(Task):
    """The flat handle a declaring tools/call gets (CreateTaskResult)."""

    result_type: Literal["task"] = Field(alias="resultType")


async def run(args: argparse.Namespace) -> int:
    headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
    http = httpx2.AsyncClient(headers=headers, timeout=30)
    transport = streamable_http_client(args.url, http_client=http)
    async with Client(transport, extensions=[TasksDeclared()]) as client:
        tool = args.tool or "restock_report"
        arguments = json.loads(args.arguments) if args.tool else {"threshold": args.threshold, "delayMs": args.delay_ms}
        handle = await client.session.call_tool(tool, arguments, allow_claimed=True)
        # A tool with immediateResultMs that finished within it answers as a plain result.
        task_id = getattr(handle, "task_id", None)
        if task_id is None:
            print("completed at once (a plain result, no task)", flush=True)
            structured = getattr(handle, "structured_content", None)
            content = [c.model_dump(by_alias=True) for c in getattr(handle, "content", [])]
            print(json.dumps(structured if structured is not None else {"content": content}))
            return 1 if getattr(handle, "is_error", False) else 0
        print(f"task {task_id}: {handle.status}", flush=True)
        last = (handle.status, None)
        while True:
            task = await client.session.send_request(GetTask(params=TaskParams(taskId=task_id)), Task)
            seen = (task.status, task.status_message)
            if seen != last:
                message = f" - {task.status_message}" if task.status_message else ""
                print(f"task {task_id}: {task.status}{message}", flush=True)
                last = seen
            # Statuses come at the poll interval, not one per SKU: cancel at the first one at or past N.
            recounted = RECOUNTED.search(task.status_message or "")
            if args.cancel_after is not None and recounted and int(recounted[1]) >= args.cancel_after:
                await client.session.send_request(CancelTask(params=TaskParams(taskId=task_id)), Task)
                print(f"task {task_id}: cancel requested", flush=True)
                args.cancel_after = None
            if task.status == "completed":
                print(json.dumps(task.result.get("structuredContent", task.result)))
                for item in task.result.get("content", [])[:1]:
                    print(item.get("text", ""))
                return 0
            if task.status in ("failed", "cancelled"):
                print(f"task {task_id} ended {task.status}: {task.error or task.status_message}")
                return 0 if task.status == "cancelled" else 1
            # Each answer carries the current advice; the server raises it as the task ages.
            await anyio.sleep(poll_delay_seconds(task.poll_interval_ms))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", help="the MCP endpoint, e.g. http://10.244.0.1:30080/mcp")
    parser.add_argument("--token", help="bearer token for the front end")
    parser.add_argument("--threshold", type=int, default=10)
    parser.add_argument("--delay-ms", type=int, default=100)
    parser.add_argument("--cancel-after", type=int, help="cancel once N SKUs are recounted")
    parser.add_argument("--tool", help="call this tool instead of restock_report")
    parser.add_argument("--arguments", default="{}", help="its arguments, a JSON object (with --tool)")
    raise SystemExit(anyio.run(run, parser.parse_args()))


if __name__ == "__main__":
    main()

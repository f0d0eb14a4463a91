"""Drives the front end at sys.argv[1] with the official Python SDK (mcp 2.3.0): poll, input,
cancel and listen over the Tasks extension. Prints one JSON line per finding; tests/tests/clients.rs
reads them.

The SDK has no Tasks client of its own, so `TasksExtension` is one, built on the SDK's extension
API (SEP-2133): it is advertised as clientCapabilities.extensions["io.modelcontextprotocol/tasks"]
on every request, claims the `resultType: "task"` result of tools/call (then polls tasks/get and
answers input with tasks/update until the task ends), and binds `notifications/tasks`.
"""

import json
import os
import sys
from typing import Any, ClassVar, Literal

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.extension import ClaimContext, ClientExtension, NotificationBinding, ResultClaim
from mcp_types import CallToolResult, ElicitRequestParams, ElicitResult, NotificationParams, Request, RequestParams, Result
from mcp_types import SubscriptionFilter, SubscriptionsListenRequest, SubscriptionsListenRequestParams
from pydantic import ConfigDict, Field, TypeAdapter

TASKS = "io.modelcontextprotocol/tasks"


def report(step: str, **fields: Any) -> None:
    print(json.dumps({"step": step, **fields}), flush=True)


class CreateTaskResult(Result):
    """The flat task handle a declaring tools/call may get."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str


class TaskParams(RequestParams):
    task_id: str = Field(alias="taskId")
    input_responses: dict[str, Any] | None = Field(alias="inputResponses", default=None)


class GetTask(Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskParams
    name_param: ClassVar[str | None] = "taskId"


class UpdateTask(Request[TaskParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: TaskParams
    name_param: ClassVar[str | None] = "taskId"


class CancelTask(Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskParams
    name_param: ClassVar[str | None] = "taskId"


class DetailedTask(Result):
    """tasks/get's answer (and an ack, whose fields are all absent)."""

    model_config = ConfigDict(extra="allow")
    result_type: str | None = Field(alias="resultType", default=None)
    task_id: str | None = Field(alias="taskId", default=None)
    status: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    input_requests: dict[str, Any] | None = Field(alias="inputRequests", default=None)
    poll_interval_ms: int | None = Field(alias="pollIntervalMs", default=None)


class TaskNotification(NotificationParams, DetailedTask):
    pass


class TasksExtension(ClientExtension):
    identifier = TASKS

    def __init__(self, elicit) -> None:
        self.elicit = elicit  # the host's elicitation callback answers the task's questions
        self.notified: list[TaskNotification] = []

    def claims(self):
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=self.resolve)]

    def notifications(self):
        return [NotificationBinding(method="notifications/tasks", params_type=TaskNotification, handler=self.on_task)]

    async def on_task(self, params: TaskNotification) -> None:
        self.notified.append(params)

    async def resolve(self, created: CreateTaskResult, ctx: ClaimContext) -> CallToolResult:
        report("created", tool=ctx.tool_name, status=created.status)
        answered: set[str] = set()
        while True:
            task = await ctx.session.send_request(GetTask(params=TaskParams(taskId=created.task_id)), DetailedTask)
            if task.status == "completed":
                return CallToolResult.model_validate(task.result)
            if task.status in ("failed", "cancelled"):
                raise RuntimeError(f"task {task.status}: {task.error}")
            pending = {k: v for k, v in (task.input_requests or {}).items() if k not in answered}
            if task.status == "input_required" and pending:
                answers = {}
                for key, request in pending.items():
                    params = TypeAdapter(ElicitRequestParams).validate_python(request["params"])
                    answer = await self.elicit(None, params)
                    answers[key] = answer.model_dump(by_alias=True, exclude_none=True)
                await ctx.session.send_request(
                    UpdateTask(params=TaskParams(taskId=created.task_id, inputResponses=answers)), DetailedTask
                )
                answered.update(answers)
            await anyio.sleep((task.poll_interval_ms or 1000) / 1000)


def text(result: CallToolResult) -> str:
    return result.content[0].text


async def confirm(context: Any, params: ElicitRequestParams) -> ElicitResult:
    report("input", message=params.message)
    return ElicitResult(action="accept", content={"confirm": True})


async def main(url: str) -> None:
    tasks = TasksExtension(confirm)
    # The elicitation callback also declares the elicitation capability: without it the server
    # must not show the task's elicitation requests.
    # A bearer token for the front end, when it authenticates callers (MCP_BEARER_TOKEN).
    token = os.environ.get("MCP_BEARER_TOKEN")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    # Content-Encoding of each tasks/get answer; httpx2 asks for gzip on its own and decodes it.
    get_encodings: list[str | None] = []

    async def seen(response: httpx2.Response) -> None:
        if response.request.headers.get("mcp-method") == "tasks/get":
            get_encodings.append(response.headers.get("content-encoding"))

    http = httpx2.AsyncClient(headers=headers, timeout=30, event_hooks={"response": [seen]})
    server = streamable_http_client(url, http_client=http)
    async with Client(server, extensions=[tasks], elicitation_callback=confirm) as client:
        report("connected", protocolVersion=client.protocol_version)

        # Poll: call_tool hands the task handle to the extension, which polls it to the end.
        result = await client.call_tool("slow_compute", {"seconds": 1, "label": "py"})
        report("poll", text=text(result))

        # A large result (over the front end's GZIP_MIN_BYTES): its answer comes gzip-coded.
        label = "large-" * 2000
        get_encodings.clear()
        result = await client.call_tool("slow_compute", {"seconds": 1, "label": label})
        got = text(result)
        report("large", same=got == f"Computed {label} in 1 s", length=len(got), encodings=list(get_encodings))

        # Input: the extension answers the confirmation with tasks/update.
        result = await client.call_tool("confirm_delete", {"filename": "py.txt"})
        report("input-done", text=text(result))

        # Cancel: take the handle ourselves (allow_claimed) and cancel it.
        created = await client.session.call_tool("slow_compute", {"seconds": 3600}, allow_claimed=True)
        ack = await client.session.send_request(CancelTask(params=TaskParams(taskId=created.task_id)), DetailedTask)
        report("cancel-ack", resultType=ack.result_type)
        while (await client.session.send_request(GetTask(params=TaskParams(taskId=created.task_id)), DetailedTask)).status != "cancelled":
            await anyio.sleep(0.2)
        report("cancel", status="cancelled")

        # Listen: Client.listen() takes no taskIds, but SubscriptionFilter keeps extension keys,
        # so send subscriptions/listen ourselves; notifications/tasks reach the binding.
        created = await client.session.call_tool("slow_compute", {"seconds": 2, "label": "listened"}, allow_claimed=True)
        listen = SubscriptionsListenRequest(
            params=SubscriptionsListenRequestParams(notifications=SubscriptionFilter(taskIds=[created.task_id]))
        )
        async with anyio.create_task_group() as group:
            group.start_soon(client.session.send_request, listen, Result)
            with anyio.fail_after(60):
                while not any(n.status == "completed" for n in tasks.notified):
                    await anyio.sleep(0.1)
            group.cancel_scope.cancel()
        for note in tasks.notified:
            meta = note.meta or {}
            report(
                "notification",
                taskId=note.task_id == created.task_id,
                status=note.status,
                subscriptionId=meta.get("io.modelcontextprotocol/subscriptionId"),
                text=(note.result or {}).get("content", [{}])[0].get("text"),
            )


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])

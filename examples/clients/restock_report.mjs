// Calls the restock_report tool through an MCP 2026-07-28 server with the Tasks extension, prints
// every task status it sees until the result, and optionally cancels the task instead.
//
//   node restock_report.mjs URL [--token TOKEN] [--threshold N] [--delay-ms MS] [--cancel-after N]
//   node restock_report.mjs URL [--token TOKEN] --tool NAME --arguments JSON
//
// With --tool it calls any tool the same way (say one of an McpServer) with the JSON arguments.
//
// The TypeScript twin of restock_report.py, on the official TypeScript client
// (@modelcontextprotocol/client 2.4) and Tasks library (@modelcontextprotocol/ext-tasks 0.2):
// the library takes the task handle tools/call returns, polls tasks/get and sends tasks/cancel.
// See README.md for how to run it with the packages from hack/clients.sh.
import { parseArgs } from "node:util";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createTaskSessionFromClient } from "@modelcontextprotocol/ext-tasks/client";

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    token: { type: "string" },
    threshold: { type: "string", default: "10" },
    "delay-ms": { type: "string", default: "100" },
    "cancel-after": { type: "string" },
    tool: { type: "string" },
    arguments: { type: "string", default: "{}" },
  },
});
const int = (name) => {
  const value = Number(values[name]);
  if (!Number.isInteger(value) || value < 0) throw new Error(`--${name}: expected an integer, got ${values[name]}`);
  return value;
};
const [url] = positionals;
if (!url) throw new Error("usage: restock_report.mjs URL [--token TOKEN] [--threshold N] [--delay-ms MS] [--cancel-after N]");
const cancelAfter = values["cancel-after"] === undefined ? undefined : int("cancel-after");
const auth = values.token ? { authorization: `Bearer ${values.token}` } : {};

const protocolVersion = "2026-07-28";
const clientInfo = { name: "restock-report-ts", version: "1.0.0" };
const clientCapabilities = { extensions: { "io.modelcontextprotocol/tasks": {} } };

// ext-tasks sends 2026-07-28 task traffic (tools/call with a task, tasks/*) through this raw path,
// since the SDK's codecs refuse it: one POST per request, with the bearer token. The library
// supplies Mcp-Name for tasks/* in context.headers, but not for tools/call.
let nextId = 0;
async function rawDispatch(request, options = {}) {
  const name = request.params?.name ?? request.params?.taskId;
  const headers = new Headers({
    ...auth,
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": protocolVersion,
    "mcp-method": request.method,
    ...(name === undefined ? {} : { "mcp-name": String(name) }),
  });
  for (const [key, value] of Object.entries(options.context?.headers ?? {})) headers.set(key, value);
  const response = await fetch(url, {
    method: "POST",
    signal: options.signal,
    headers,
    body: JSON.stringify({ jsonrpc: "2.0", id: `raw-${++nextId}`, ...request }),
  });
  const body = await response.text();
  const sse = response.headers.get("content-type")?.startsWith("text/event-stream");
  const data = sse ? body.split("\n").filter((line) => line.startsWith("data:")).at(-1)?.slice(5) : body;
  let message;
  try {
    message = JSON.parse(data);
  } catch {
    throw new Error(`${request.method}: HTTP ${response.status} ${body.slice(0, 200)}`);
  }
  return message.error ? { kind: "error", error: message.error } : { kind: "result", result: message.result };
}

const client = new Client(clientInfo, { capabilities: clientCapabilities, versionNegotiation: { mode: "auto" } });
await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: auth } }));
const session = createTaskSessionFromClient(client, {
  endpointId: url,
  rawDispatch,
  v2RequestFraming: { protocolVersion, clientInfo, clientCapabilities },
});

const recounted = (message) => Number(/recounted (\d+) of/.exec(message ?? "")?.[1] ?? -1);
try {
  const execution = values.tool
    ? await session.callTool(values.tool, JSON.parse(values.arguments))
    : await session.callTool("restock_report", { threshold: int("threshold"), delayMs: int("delay-ms") });
  const taskId = execution.handle?.taskId ?? "(no task)";
  let last;
  const show = (task) => {
    const seen = task.statusMessage ? `${task.status} - ${task.statusMessage}` : task.status;
    if (seen !== last) console.log(`task ${taskId}: ${seen}`);
    last = seen;
  };
  let cancelling = false;
  let { outcome } = await execution.settle({
    onEvent: async (event) => {
      if (event.type !== "task") return;
      show(event.task);
      // Statuses come at the poll interval, not one per SKU: cancel at the first one at or past N.
      if (cancelAfter !== undefined && !cancelling && recounted(event.task.statusMessage) >= cancelAfter) {
        cancelling = true;
        await execution.cancel();
        console.log(`task ${taskId}: cancel requested`);
      }
    },
  });
  // Cancellation is cooperative, so the execution settles at the server's ack of tasks/cancel;
  // follow the task to the end the server gives it.
  if (cancelling) outcome = await session.task(taskId).result();
  if (outcome.task) show(outcome.task);
  if (outcome.status === "completed") {
    console.log(JSON.stringify(outcome.result.structuredContent ?? outcome.result));
    console.log(outcome.result.content?.[0]?.text ?? "");
  } else {
    console.log(`task ${taskId} ended ${outcome.status}: ${outcome.error?.message ?? outcome.task?.statusMessage ?? ""}`);
    if (outcome.status === "failed") process.exitCode = 1;
  }
} finally {
  await session.close();
  await client.close();
}

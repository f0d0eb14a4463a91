// Drives the front end at process.argv[2] with the official TypeScript client
// (@modelcontextprotocol/client 2.4.0) and Tasks library (@modelcontextprotocol/ext-tasks 0.2.2):
// poll, input, cancel and listen. Prints one JSON line per finding; tests/tests/clients.rs reads them.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createTaskSessionFromClient, resultFromTaskOutcome } from "@modelcontextprotocol/ext-tasks/client";

const url = process.argv[2];
// A bearer token for the front end, when it authenticates callers (MCP_BEARER_TOKEN).
const authorization = process.env.MCP_BEARER_TOKEN ? { authorization: `Bearer ${process.env.MCP_BEARER_TOKEN}` } : {};
const protocolVersion = "2026-07-28";
const clientInfo = { name: "mto-ts-client", version: "1.0.0" };
// Declared on every request the SDK frames, so subscriptions/listen may ask for taskIds.
const clientCapabilities = {
  elicitation: { form: {} },
  extensions: { "io.modelcontextprotocol/tasks": {} },
};
const report = (step, fields) => console.log(JSON.stringify({ step, ...fields }));
// Content-Encoding of each tasks/get answer; fetch asks for gzip on its own and decodes it.
const getEncodings = [];
const text = (result) => result.content?.[0]?.text;

// ext-tasks sends 2026-07-28 task traffic through this raw path, since the SDK's codecs refuse
// it: one POST per request. The library supplies Mcp-Name for tasks/* in context.headers, but
// not for tools/call.
let nextId = 0;
async function rawDispatch(request, options = {}) {
  const name = request.params?.name ?? request.params?.taskId;
  const headers = new Headers({
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": protocolVersion,
    "mcp-method": request.method,
    ...(name === undefined ? {} : { "mcp-name": String(name) }),
    ...authorization,
  });
  for (const [key, value] of Object.entries(options.context?.headers ?? {})) headers.set(key, value);
  const response = await fetch(url, {
    method: "POST",
    signal: options.signal,
    headers,
    body: JSON.stringify({ jsonrpc: "2.0", id: `raw-${++nextId}`, ...request }),
  });
  const body = await response.text();
  if (request.method === "tasks/get") getEncodings.push(response.headers.get("content-encoding"));
  const message = response.headers.get("content-type")?.startsWith("text/event-stream")
    ? JSON.parse(body.split("\n").filter((l) => l.startsWith("data:")).at(-1).slice(5))
    : JSON.parse(body);
  return message.error ? { kind: "error", error: message.error } : { kind: "result", result: message.result };
}

const client = new Client(clientInfo, {
  capabilities: clientCapabilities,
  versionNegotiation: { mode: "auto" },
});
await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: authorization } }));
report("connected", { era: client.getProtocolEra() });

const session = createTaskSessionFromClient(client, {
  endpointId: url,
  rawDispatch,
  v2RequestFraming: { protocolVersion, clientInfo, clientCapabilities },
  onInputRequest: async (request, context) => {
    report("input", { kind: request.kind, delivery: context.delivery, message: request.params.message });
    return { action: "accept", content: { confirm: true } };
  },
});

try {
  // Poll: a task that completes after a second.
  const poll = await session.callTool("slow_compute", { seconds: 1, label: "ts" });
  const polled = await poll.settle();
  report("poll", { kind: poll.kind, status: polled.outcome.status, text: text(resultFromTaskOutcome(polled.outcome)) });

  // A large result (over the front end's GZIP_MIN_BYTES): its answer comes gzip-coded.
  const label = "large-".repeat(2000);
  getEncodings.length = 0;
  const large = await session.callTool("slow_compute", { seconds: 1, label });
  const settled = await large.settle();
  const got = text(resultFromTaskOutcome(settled.outcome));
  report("large", { same: got === `Computed ${label} in 1 s`, length: got?.length, encodings: getEncodings });

  // Input: the task asks for a confirmation; the session answers it with tasks/update.
  const input = await session.callTool("confirm_delete", { filename: "ts.txt" });
  const answered = await input.settle();
  report("input-done", { kind: input.kind, status: answered.outcome.status, text: text(resultFromTaskOutcome(answered.outcome)) });

  // Listen: notifications/tasks for a task, on a subscriptions/listen stream.
  const watched = await session.callTool("slow_compute", { seconds: 2, label: "listened" });
  const taskId = watched.handle.taskId;
  const finished = new Promise((resolve) => {
    client.fallbackNotificationHandler = async (notification) => {
      if (notification.method !== "notifications/tasks") return;
      const { status, _meta } = notification.params;
      report("notification", { taskId: notification.params.taskId === taskId, status, subscriptionId: _meta?.["io.modelcontextprotocol/subscriptionId"] });
      if (status === "completed") resolve(notification.params);
    };
  });
  // NB: the SDK's SubscriptionFilter schema has no taskIds, so honoredFilter drops the
  // server's echo of them (it reads {}); the notifications arrive all the same.
  const subscription = await client.listen({ taskIds: [taskId] });
  report("listen-ack", { honored: subscription.honoredFilter });
  const last = await finished;
  report("listen-done", { text: text(last.result) });
  await subscription.close();
  await watched.settle();

  // Cancel: a task that would run for an hour.
  const long = await session.callTool("slow_compute", { seconds: 3600 });
  await long.cancel();
  const cancelled = await long.settle();
  report("cancel", { kind: long.kind, status: cancelled.outcome.status });
} finally {
  await session.close();
  await client.close();
}

// Drives the TypeScript SDK's own client through one sdkrec scenario (see
// ../plans.go); prints one JSON line per step start and end on stdout.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { say, now, step } from "./steps.mjs";

const url = new URL(process.env.MCP_URL);

async function connect() {
  const c = new Client({ name: "ts-recorder-client", version: "1.32.2" });
  const t = new StreamableHTTPClientTransport(url, { reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 100, maxReconnectionDelay: 100, reconnectionDelayGrowFactor: 1 } });
  await c.connect(t);
  return { c, t };
}

const call = (c, name, args, opts = {}) => c.callTool({ name, arguments: args }, undefined, { timeout: 5000, ...opts });
const progress = { onprogress: () => {} };

let { c, t } = await connect();
await step("list tools", () => c.listTools().then(() => ({})));
await step("lookup", () => call(c, "lookup", { key: "a" }));
await step("delete item", () => call(c, "delete_item", { id: "item-1" }));
await step("tool error", () => call(c, "always_fails", {}));
await step("unknown tool", () => call(c, "no_such_tool", {}));
await step("invalid arguments", () => call(c, "lookup", { key: 42 }));
await step("progress", () => call(c, "count_slowly", { n: 3 }, progress));
await step("client cancels", () => call(c, "count_slowly", { n: 30 }, { timeout: 500 }));
await new Promise((r) => setTimeout(r, 500));
await step("wrong protocol version", () => call(c, "lookup", { key: "v" }, { timeout: 3000 }));
await step("garbled body", () => call(c, "lookup", { key: "g" }, { timeout: 3000 }));
await step("unavailable then resent", () => call(c, "delete_item", { id: "item-2" }), 1);
const got = await step("session lost", () => call(c, "count_slowly", { n: 3 }, progress), 1);
await c.close().catch(() => {});
if (got === "call_error") {
  say({ step: "reconnect", start: now() });
  ({ c, t } = await connect());
  await step("resent in new session", () => call(c, "count_slowly", { n: 3 }, progress));
  await t.terminateSession().catch(() => {});
  await c.close();
}

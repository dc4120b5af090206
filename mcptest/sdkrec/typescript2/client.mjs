// Drives the TypeScript SDK v2's own client (@modelcontextprotocol/client on
// npm) through one sdkrec scenario (see ../plans.go): "modern" negotiates the
// 2026-07-28 wire (server/discover), "legacy" is the client's default 2025
// initialize handshake. Prints one JSON line per step start and end.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { say, now, step } from "./steps.mjs";

const url = new URL(process.env.MCP_URL);
const scenario = process.env.MCP_SCENARIO;

async function connect() {
  const c = new Client({ name: "ts2-recorder-client", version: "2.4.0" },
    { versionNegotiation: { mode: scenario === "modern" ? "auto" : "legacy" } });
  const t = new StreamableHTTPClientTransport(url, { reconnectionOptions: { maxRetries: 0, initialReconnectionDelay: 100, maxReconnectionDelay: 100, reconnectionDelayGrowFactor: 1 } });
  await c.connect(t);
  return { c, t };
}

const call = (c, name, args, opts = {}) => c.callTool({ name, arguments: args }, { timeout: 5000, ...opts });
const progress = { onprogress: () => {} };

const { c } = await connect();
await step("list tools", () => c.listTools().then(() => ({})));
await step("lookup", () => call(c, "lookup", { key: "a" }));
await step("unavailable then resent", () => call(c, "delete_item", { id: "item-1" }), 1);
await step("tool error", () => call(c, "always_fails", {}));
await step("invalid arguments", () => call(c, "lookup", { key: 42 }));
await step("cut then resent", () => call(c, "count_slowly", { n: 3 }, progress), 1);
await step("client cancels", () => call(c, "count_slowly", { n: 30 }, { timeout: 500 }));
await new Promise((r) => setTimeout(r, 500));
await c.close().catch(() => {});

// The test tools of mcptest served by the TypeScript SDK (@modelcontextprotocol/sdk
// on npm) over Streamable HTTP, one transport per session.
import { randomUUID } from "node:crypto";
import http from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

function tools() {
  const s = new McpServer({ name: "ts-recorder-server", version: "1.32.2" });
  s.registerTool("lookup", { description: "Look up a value by key.", inputSchema: { key: z.string() }, annotations: { readOnlyHint: true, idempotentHint: true } },
    async ({ key }) => ({ content: [{ type: "text", text: `value of ${key}` }] }));
  s.registerTool("delete_item", { description: "Delete an item.", inputSchema: { id: z.string() }, annotations: { destructiveHint: true } },
    async ({ id }) => ({ content: [{ type: "text", text: `deleted ${id}` }] }));
  s.registerTool("always_fails", { description: "Fail every time." }, async () => { throw new Error("the tool failed on purpose"); });
  s.registerTool("count_slowly", { description: "Count, reporting progress.", inputSchema: { n: z.number().optional() } },
    async ({ n = 3 }, extra) => {
      const token = extra._meta?.progressToken;
      for (let i = 0; i < n; i++) {
        if (extra.signal.aborted) break;
        if (token !== undefined) await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: i + 1, total: n } });
        await new Promise((r) => setTimeout(r, 100));
      }
      return { content: [{ type: "text", text: `counted to ${n}` }] };
    });
  return s;
}

const sessions = new Map();

http.createServer(async (req, res) => {
  let body;
  if (req.method === "POST") {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const raw = Buffer.concat(chunks).toString();
    try { body = JSON.parse(raw); } catch { body = undefined; }
    if (body === undefined) {
      // Let the SDK answer the unparsable body itself.
      const t = sessions.get(req.headers["mcp-session-id"]);
      if (t) return t.handleRequest(req, res, raw);
    }
  }
  const sid = req.headers["mcp-session-id"];
  let t = sid ? sessions.get(sid) : undefined;
  if (!t && !sid && body && isInitializeRequest(body)) {
    t = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => sessions.set(id, t),
    });
    t.onclose = () => t.sessionId && sessions.delete(t.sessionId);
    await tools().connect(t);
  }
  if (!t) {
    res.writeHead(sid ? 404 : 400, { "content-type": "application/json" });
    res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32001, message: "Session not found" }, id: null }));
    return;
  }
  await t.handleRequest(req, res, body);
}).listen(Number(process.env.MCP_PORT), "127.0.0.1");

// The test tools of mcptest served by the TypeScript SDK v2
// (@modelcontextprotocol/server on npm) through its web-standard handler
// (createMcpHandler: the 2026-07-28 per-request path, and 2025-era requests
// served statelessly), behind a plain node:http adapter.
import http from "node:http";
import { Readable } from "node:stream";
import { McpServer, createMcpHandler } from "@modelcontextprotocol/server";
import { z } from "zod";

function tools() {
  const s = new McpServer({ name: "ts2-recorder-server", version: "2.4.0" });
  s.registerTool("lookup", { description: "Look up a value by key.", inputSchema: z.object({ key: z.string() }), annotations: { readOnlyHint: true, idempotentHint: true } },
    async ({ key }) => ({ content: [{ type: "text", text: `value of ${key}` }] }));
  s.registerTool("delete_item", { description: "Delete an item.", inputSchema: z.object({ id: z.string() }), annotations: { destructiveHint: true } },
    async ({ id }) => ({ content: [{ type: "text", text: `deleted ${id}` }] }));
  s.registerTool("always_fails", { description: "Fail every time." }, async () => { throw new Error("the tool failed on purpose"); });
  s.registerTool("count_slowly", { description: "Count, reporting progress.", inputSchema: z.object({ n: z.number().optional() }) },
    async ({ n = 3 }, ctx) => {
      const token = ctx.mcpReq._meta?.progressToken;
      for (let i = 0; i < n; i++) {
        if (ctx.mcpReq.signal.aborted) break;
        if (token !== undefined) await ctx.mcpReq.notify({ method: "notifications/progress", params: { progressToken: token, progress: i + 1, total: n } });
        await new Promise((r) => setTimeout(r, 100));
      }
      return { content: [{ type: "text", text: `counted to ${n}` }] };
    });
  return s;
}

const handler = createMcpHandler(() => tools());

http.createServer(async (req, res) => {
  // The client leaving (a closed stream) aborts the request, as the SDK's
  // own Node adapter does.
  const gone = new AbortController();
  res.on("close", () => { if (!res.writableFinished) gone.abort(); });
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers.set(k, v);
  const body = req.method === "POST" ? Buffer.concat(chunks) : undefined;
  const request = new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers, body, signal: gone.signal });
  let response;
  try {
    response = await handler.fetch(request);
  } catch (e) {
    res.writeHead(500, { "content-type": "text/plain" });
    res.end(String(e));
    return;
  }
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (!response.body) return res.end();
  Readable.fromWeb(response.body).on("error", () => res.destroy()).pipe(res);
}).listen(Number(process.env.MCP_PORT), "127.0.0.1");

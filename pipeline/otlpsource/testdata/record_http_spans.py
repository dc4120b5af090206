"""Record the OpenTelemetry spans the official Python MCP SDK emits over
Streamable HTTP: client spans (one per request sent, from the SDK's JSON-RPC
dispatcher; the in-process Client of record_spans.py makes none) and server
spans (one per request handled), each process with its own resource.

The server (this script with the argument "server") runs an MCPServer with
the tools of record_spans.py under uvicorn on 127.0.0.1; the client drives
it with the SDK's Client over http://127.0.0.1:PORT/mcp (a successful call,
a tool that raises, a tool that returns an error result, bad arguments, an
unknown tool, an unknown prompt, tools/list). Both halves' spans go into one
ExportTraceServiceRequest, as a Collector receiving from both would batch
them:

  python-sdk-http.pb    protobuf (otlp_proto)
  python-sdk-http.json  OTLP/JSON on one line (otlp_json, file exporter)

Regenerate (versions used: mcp 2.3.0, opentelemetry-sdk 1.45.2, uvicorn as
mcp pulls it in):
  python3 -m venv /tmp/venv && /tmp/venv/bin/pip install mcp==2.3.0 opentelemetry-sdk==1.45.2 opentelemetry-exporter-otlp-proto-common
  /tmp/venv/bin/python record_http_spans.py
"""

import asyncio
import base64
import json
import os
import socket
import subprocess
import sys
import time

from google.protobuf.json_format import MessageToDict
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

here = os.path.dirname(os.path.abspath(__file__))
exporter = InMemorySpanExporter()


def provider(name, instance):
    p = TracerProvider(resource=Resource.create({"service.name": name, "service.version": "0.1.0", "service.instance.id": instance}))
    p.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(p)
    return p


def serve(port, out):
    p = provider("python-mcp-demo", "demo-server-1")
    import signal

    import uvicorn

    from mcp.server.mcpserver import MCPServer
    from mcp.types import CallToolResult, TextContent

    server = MCPServer("python-mcp-demo")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    def explode() -> str:
        """A tool that raises."""
        raise RuntimeError("the disk is full")

    @server.tool()
    def refuse() -> CallToolResult:
        """A tool that reports failure in its result."""
        return CallToolResult(content=[TextContent(type="text", text="not allowed today")], is_error=True)

    config = uvicorn.Config(server.streamable_http_app(), host="127.0.0.1", port=port, log_level="warning")
    srv = uvicorn.Server(config)
    signal.signal(signal.SIGTERM, lambda *_: setattr(srv, "should_exit", True))
    srv.run()
    p.force_flush()
    with open(out, "wb") as f:
        f.write(encode_spans(exporter.get_finished_spans()).SerializeToString())


async def drive(url):
    from mcp import Client

    async with Client(url) as client:
        await client.list_tools()
        await client.call_tool("add", {"a": 2, "b": 3})
        await client.call_tool("explode", {})
        await client.call_tool("refuse", {})
        await client.call_tool("add", {"a": "two", "b": 3})
        await client.call_tool("no_such_tool", {})
        try:
            await client.get_prompt("no_such_prompt")
        except Exception:  # a JSON-RPC error: the SDK raises
            pass


def main():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server_out = os.path.join(here, ".server-spans.pb")
    proc = subprocess.Popen([sys.executable, __file__, "server", str(port), server_out])
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        p = provider("python-mcp-client", "demo-client-1")
        asyncio.run(drive(f"http://127.0.0.1:{port}/mcp"))
        p.force_flush()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    req = encode_spans(exporter.get_finished_spans())
    server_req = ExportTraceServiceRequest()
    with open(server_out, "rb") as f:
        server_req.ParseFromString(f.read())
    os.remove(server_out)
    req.resource_spans.extend(server_req.resource_spans)
    with open(os.path.join(here, "python-sdk-http.pb"), "wb") as f:
        f.write(req.SerializeToString())

    def hex_ids(v):
        """OTLP/JSON spells trace and span ids in hex, where protobuf JSON uses base64."""
        if isinstance(v, dict):
            return {k: (base64.b64decode(x).hex() if k in ("traceId", "spanId", "parentSpanId") and x else hex_ids(x)) for k, x in v.items()}
        if isinstance(v, list):
            return [hex_ids(x) for x in v]
        return v

    doc = hex_ids(MessageToDict(req, use_integers_for_enums=True))
    with open(os.path.join(here, "python-sdk-http.json"), "w") as f:
        f.write(json.dumps(doc, separators=(",", ":")) + "\n")
    kinds = [s.kind for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans]
    print(f"{len(kinds)} spans: {kinds.count(3)} client, {kinds.count(2)} server")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "server":
        serve(int(sys.argv[2]), sys.argv[3])
    else:
        main()

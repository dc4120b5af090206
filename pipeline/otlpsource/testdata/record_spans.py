"""Record the OpenTelemetry spans the official Python MCP SDK emits.

Runs an MCPServer in process with a few tools and drives it with the SDK's
own Client: a successful call, a tool that raises, a tool that returns an
error result, bad arguments, an unknown tool, an unknown prompt (a JSON-RPC
error) and tools/list. The SDK's instrumentation makes one server span per
request handled; the in-process Client makes no client spans (they come
from the SDK's JSON-RPC dispatcher, which a real transport uses:
record_http_spans.py records both). They are written as the OpenTelemetry
Collector's exporters write them:

  python-sdk.pb    one ExportTraceServiceRequest, protobuf (otlp_proto,
                   the Kafka exporter's default encoding)
  python-sdk.json  the same request as OTLP/JSON on one line (the file
                   exporter's format, and the Kafka exporter's otlp_json)

Regenerate (versions used: mcp 2.3.0, opentelemetry-sdk 1.45.2):
  python3 -m venv /tmp/venv && /tmp/venv/bin/pip install mcp opentelemetry-sdk opentelemetry-exporter-otlp-proto-common
  /tmp/venv/bin/python record_spans.py
"""

import asyncio
import base64
import json
import os

from google.protobuf.json_format import MessageToDict
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider(resource=Resource.create({"service.name": "python-mcp-demo", "service.version": "0.1.0"}))
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)

from mcp import Client  # noqa: E402  (after the provider is set)
from mcp.server.mcpserver import MCPServer  # noqa: E402
from mcp.types import CallToolResult, TextContent  # noqa: E402

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


async def main() -> None:
    async with Client(server) as client:
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


asyncio.run(main())
provider.force_flush()
req = encode_spans(exporter.get_finished_spans())
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "python-sdk.pb"), "wb") as f:
    f.write(req.SerializeToString())


def hex_ids(v):
    """OTLP/JSON spells trace and span ids in hex, where protobuf JSON uses base64."""
    if isinstance(v, dict):
        return {k: (base64.b64decode(x).hex() if k in ("traceId", "spanId", "parentSpanId") and x else hex_ids(x)) for k, x in v.items()}
    if isinstance(v, list):
        return [hex_ids(x) for x in v]
    return v


doc = hex_ids(MessageToDict(req, use_integers_for_enums=True))
with open(os.path.join(here, "python-sdk.json"), "w") as f:
    f.write(json.dumps(doc, separators=(",", ":")) + "\n")
print(f"{len(exporter.get_finished_spans())} spans")

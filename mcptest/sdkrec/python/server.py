"""The test tools of mcptest, served by the Python SDK (mcp on PyPI) over Streamable HTTP."""

import asyncio
import os

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("py-recorder-server", version="2.3.0")


@server.tool(annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True))
def lookup(key: str) -> str:
    """Look up a value by key."""
    return f"value of {key}"


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def delete_item(id: str) -> str:
    """Delete an item."""
    return f"deleted {id}"


@server.tool()
def always_fails() -> str:
    """Fail every time."""
    raise RuntimeError("the tool failed on purpose")


@server.tool()
async def count_slowly(ctx: Context, n: int = 3) -> str:
    """Count, reporting progress."""
    for i in range(n):
        await ctx.report_progress(i + 1, n)
        await asyncio.sleep(0.1)
    return f"counted to {n}"


if __name__ == "__main__":
    server.settings.log_level = "WARNING"
    server.run("streamable-http", host="127.0.0.1", port=int(os.environ["MCP_PORT"]))

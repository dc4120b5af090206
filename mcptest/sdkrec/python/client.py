"""Drives the Python SDK's own client through one sdkrec scenario (see ../plans.go).

Prints one JSON line per step start and end on stdout for sdkrec.
"""

import asyncio
import json
import os
import sys
from datetime import datetime, timezone

from mcp import Client
from mcp.types import Implementation

URL = os.environ["MCP_URL"]
SCENARIO = os.environ["MCP_SCENARIO"]
INFO = Implementation(name="py-recorder-client", version="2.3.0")


def say(**kw):
    print(json.dumps(kw), flush=True)


def now():
    return datetime.now(timezone.utc).isoformat()


async def step(name, fn, resend=0):
    say(step=name, start=now())
    attempts, got, detail = 0, "", ""
    while True:
        attempts += 1
        try:
            res = await fn()
            got = "tool_error" if getattr(res, "is_error", False) else "result"
            detail = str(getattr(res, "content", ""))[:200]
            break
        except Exception as e:  # the SDK's error for the call
            got, detail = "call_error", f"{type(e).__name__}: {e}"[:200]
            if attempts > resend:
                break
    say(step=name, got=got, attempts=attempts, detail=detail)
    return got


def connect(mode):
    return Client(URL, mode=mode, client_info=INFO, read_timeout_seconds=10)


async def legacy():
    async with connect("legacy") as c:
        await common(c)
        await step("wrong protocol version", lambda: c.call_tool("lookup", {"key": "v"}))
        await step("garbled body", lambda: c.call_tool("lookup", {"key": "g"}, read_timeout_seconds=2))
        await step("unavailable then resent", lambda: c.call_tool("delete_item", {"id": "item-2"}), resend=1)
        got = await step("session lost", lambda: c.call_tool("count_slowly", {"n": 3}, progress_callback=progress), resend=1)
    if got == "call_error":
        # The application reconnects and re-sends the call in a new session.
        say(step="reconnect", start=now())
        async with connect("legacy") as c:
            await step("resent in new session", lambda: c.call_tool("count_slowly", {"n": 3}, progress_callback=progress))


async def modern():
    async with connect("2026-07-28") as c:
        await common(c, cancel=False)
        await step("cut then resent", lambda: c.call_tool("count_slowly", {"n": 3}, progress_callback=progress), resend=1)
        await step("client cancels", lambda: c.call_tool("count_slowly", {"n": 30}, read_timeout_seconds=0.5))


async def progress(p, total, message):
    pass


async def common(c, cancel=True):
    await step("list tools", lambda: c.list_tools())
    await step("lookup", lambda: c.call_tool("lookup", {"key": "a"}))
    if SCENARIO == "legacy":
        await step("delete item", lambda: c.call_tool("delete_item", {"id": "item-1"}))
    else:
        await step("unavailable then resent", lambda: c.call_tool("delete_item", {"id": "item-1"}), resend=1)
    await step("tool error", lambda: c.call_tool("always_fails", {}))
    if SCENARIO == "legacy":
        await step("unknown tool", lambda: c.call_tool("no_such_tool", {}))
    await step("invalid arguments", lambda: c.call_tool("lookup", {"key": 42}))
    if SCENARIO == "legacy":
        await step("progress", lambda: c.call_tool("count_slowly", {"n": 3}, progress_callback=progress))
        await step("client cancels", lambda: c.call_tool("count_slowly", {"n": 30}, read_timeout_seconds=0.5))
        await asyncio.sleep(0.5)


asyncio.run(legacy() if SCENARIO == "legacy" else modern())
sys.exit(0)

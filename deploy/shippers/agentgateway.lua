-- agentgateway.lua: Fluent Bit Lua filter that turns one agentgateway JSON
-- access-log record (scope "request", its native MCP fields, and the
-- bodies deploy/agentgateway/config.yaml adds) into one mcplens
-- contract-v1 "exchange" event; records of other scopes (agentgateway's
-- own logs) are dropped, and a request record it cannot map becomes an
-- event with unmappable and raw, which the ingester quarantines.
--
-- The reference for this mapping is pipeline/agentgateway (what
-- `ingest --format agentgateway` reads); the tests in this directory run
-- this file on pipeline/agentgateway/testdata/access.log and require the
-- same events. Keep it in step with agentgateway.vrl.
--
-- Fluent Bit hands numbers to Lua as doubles; fluent-bit-agentgateway.yaml
-- lists the integer fields in type_int_key.

local DROPPED_REQUEST_HEADERS = {
  ["authorization"] = true, ["cookie"] = true,
  ["proxy-authorization"] = true, ["x-api-key"] = true,
}

local function str(v)
  if type(v) == "string" and v ~= "" then return v end
  return nil
end

-- num reads a number, or a string holding one; nil for anything else.
local function num(v)
  if type(v) == "number" then return v end
  if type(v) == "string" then return tonumber(v) end
  return nil
end

-- headers lower-cases names, keeps string values, drops credentials; nil
-- when nothing is left (Fluent Bit would pack an empty table as an array).
local function headers(h)
  if type(h) ~= "table" then return nil end
  local out, n = {}, 0
  for k, v in pairs(h) do
    if type(k) == "string" and type(v) == "string" then
      local name = string.lower(k)
      if not DROPPED_REQUEST_HEADERS[name] then
        out[name] = v
        n = n + 1
      end
    end
  end
  if n == 0 then return nil end
  return out
end

-- rfc3339 accepts what Go's time.RFC3339Nano parses: a date, T, a time
-- with an optional fraction, and Z or a numeric offset.
local function rfc3339(s)
  if type(s) ~= "string" then return false end
  local y, mo, d, h, mi, sec, rest = string.match(s, "^(%d%d%d%d)%-(%d%d)%-(%d%d)T(%d%d):(%d%d):(%d%d)(.*)$")
  if y == nil then return false end
  mo, d, h, mi, sec = tonumber(mo), tonumber(d), tonumber(h), tonumber(mi), tonumber(sec)
  if mo < 1 or mo > 12 or d < 1 or d > 31 or h > 23 or mi > 59 or sec > 59 then return false end
  rest = string.gsub(rest, "^%.%d+", "", 1)
  return rest == "Z" or string.match(rest, "^[+-]%d%d:%d%d$") ~= nil
end

local function unmappable(reason, rec)
  local out = {}
  out["v"] = 1
  out["unmappable"] = reason
  out["raw"] = rec
  return out
end

function agentgateway_contract(tag, timestamp, rec)
  if rec["scope"] ~= "request" then
    return -1, timestamp, rec
  end
  if not rfc3339(rec["time"]) then
    return 2, timestamp, unmappable("agentgateway: time " .. tostring(rec["time"]) .. " is not RFC 3339", rec)
  end
  local method = str(rec["http.method"])
  if method == nil then
    return 2, timestamp, unmappable("agentgateway: http.method missing", rec)
  end
  local status = num(rec["http.status"])
  if status == nil and rec["http.status"] ~= nil then
    return 2, timestamp, unmappable("agentgateway: http.status " .. tostring(rec["http.status"]) .. " is not a number", rec)
  end
  status = status or 0

  local out = {}
  out["v"] = 1
  out["kind"] = "exchange"
  out["source"] = "gateway"
  out["ts"] = rec["time"]
  out["http.method"] = method
  local tid, sid = str(rec["trace.id"]), str(rec["span.id"])
  if tid ~= nil and sid ~= nil then
    out["exchange_id"] = tid .. "-" .. sid
    out["event_id"] = "agentgateway:" .. tid .. "-" .. sid
  end
  out["observer"] = str(rec["gateway"])
  out["server"] = str(rec["mcp.target"]) or str(rec["route"])
  local host = str(rec["http.host"])
  if host ~= nil then
    out["url"] = "http://" .. host .. (str(rec["http.path"]) or "")
  end
  out["session_id"] = str(rec["mcp.session.id"])
  local req_h = headers(rec["rq.headers.all"])
  if req_h ~= nil then
    out["http.request_headers"] = req_h
    if out["session_id"] == nil then out["session_id"] = str(req_h["mcp-session-id"]) end
    local ua = str(req_h["user-agent"])
    if ua ~= nil then
      local product = string.match(ua, "^[^ ]*")
      local slash = string.find(product, "/", 1, true)
      if slash == nil then
        out["client_name"] = str(product)
      else
        out["client_name"] = str(string.sub(product, 1, slash - 1))
        out["client_version"] = str(string.sub(product, slash + 1))
      end
    end
  end
  local d = str(rec["duration"])
  if d ~= nil and string.sub(d, -2) == "ms" then
    out["duration_ms"] = tonumber(string.sub(d, 1, -3))
  end
  local req_body, resp_body = rec["mcplens.request_body"], rec["mcplens.response_body"]
  local have_req, have_resp = type(req_body) == "string", type(resp_body) == "string"
  out["request_body"] = have_req and req_body or ""
  out["response_body"] = have_resp and resp_body or ""
  local ct = str(rec["mcplens.response_content_type"])
  if ct ~= nil then
    out["http.response_headers"] = { ["content-type"] = ct }
  end

  local attrs, has_attrs = {}, false
  local function attr(k, v)
    if v ~= nil then
      attrs[k] = v
      has_attrs = true
    end
  end
  local err = str(rec["error"])
  if status >= 500 and err ~= nil then
    -- The gateway's own answer: the backend failed before answering.
    out["transport_error"] = err
    attr("gateway_status", math.floor(status))
  elseif status > 0 then
    out["http.status"] = math.floor(status)
  elseif err ~= nil then
    out["transport_error"] = err
  else
    -- Neither a status nor an error: the client went away before any
    -- answer (a client abort, as Envoy's DC).
    out["transport_error"] = "timeout"
    attr("aborted_by", "client")
  end

  local mcp_method = str(rec["mcp.method.name"]) or str(rec["mcp.method"])
  local tool = str(rec["gen_ai.tool.name"])
  if tool == nil and (str(rec["mcp.resource.type"]) or str(rec["mcp.resource"])) == "tool" then
    tool = str(rec["mcp.resource.name"])
  end
  attr("mcp.method.name", mcp_method)
  attr("gen_ai.tool.name", tool)
  attr("mcp.error.message", str(rec["mcp.error.message"]))
  -- A code (a number, or a string holding one) as an integer's text,
  -- cut toward zero; other text as it is.
  local code = num(rec["mcp.error.code"])
  if code ~= nil and math.abs(code) < 2 ^ 53 then
    if code < 0 then code = math.ceil(code) else code = math.floor(code) end
    attr("mcp.error.code", string.format("%d", code))
  elseif type(rec["mcp.error.code"]) == "string" then
    attr("mcp.error.code", str(rec["mcp.error.code"]))
  end
  attr("route", str(rec["route"]))
  attr("reason", str(rec["reason"]))
  if have_req and have_resp then
    out["evidence"] = "bodies"
  elseif mcp_method ~= nil then
    out["evidence"] = "envelope"
  else
    out["evidence"] = "status_only"
  end
  if has_attrs then out["attrs"] = attrs end

  -- 2: the record changed, the timestamp did not.
  return 2, timestamp, out
end

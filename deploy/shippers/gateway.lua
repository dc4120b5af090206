-- gateway.lua: Fluent Bit Lua filter that turns one gateway JSON access-log
-- record into one mcplens contract-v1 "exchange" event (see README.md).
--
-- The reference for this mapping is gateway.go (GatewayFields); the tests
-- in this directory run this file on testdata/gateway/in and require the
-- same events. Keep it in step with gateway.vrl.
--
-- Fluent Bit hands numbers to Lua as doubles and packs them back as
-- doubles; fluent-bit.yaml lists the integer fields in type_int_key.

local DROPPED_REQUEST_HEADERS = {
  ["authorization"] = true, ["cookie"] = true,
  ["proxy-authorization"] = true, ["x-api-key"] = true,
}
local DROPPED_RESPONSE_HEADERS = { ["set-cookie"] = true }

-- Envoy response flags, first match wins.
local TRANSPORT_FLAGS = {
  { "DC", "client_abort" }, { "UT", "timeout" }, { "UF", "connection_refused" },
  { "UC", "connection_reset" }, { "UR", "connection_reset" },
}
local STREAM_FLAGS = {
  { "DC", "client_abort" }, { "UT", "timeout" }, { "SI", "timeout" },
  { "UC", "server_abort" }, { "UR", "reset" }, { "UPE", "server_abort" },
}

-- headers lower-cases names, keeps string values, drops the names in drop;
-- nil when nothing is left (Fluent Bit would pack an empty table as an array).
local function headers(h, drop)
  if type(h) ~= "table" then return nil end
  local out, n = {}, 0
  for k, v in pairs(h) do
    if type(k) == "string" and type(v) == "string" then
      local name = string.lower(k)
      if not drop[name] then
        out[name] = v
        n = n + 1
      end
    end
  end
  if n == 0 then return nil end
  return out
end

local function str(v)
  if type(v) == "string" then return v end
  return nil
end

local function first_flag(flags, rules, fallback)
  for _, rule in ipairs(rules) do
    for _, f in ipairs(flags) do
      if f == rule[1] then return rule[2] end
    end
  end
  return fallback
end

function mcp_contract(tag, timestamp, rec)
  local req_h = headers(rec.request_headers, DROPPED_REQUEST_HEADERS)
  local resp_h = headers(rec.response_headers, DROPPED_RESPONSE_HEADERS)
  local status = 0
  if type(rec.status) == "number" then status = math.floor(rec.status) end
  local flags = {}
  if type(rec.response_flags) == "string" then
    for f in string.gmatch(rec.response_flags, "[^,]+") do
      if f ~= "-" then flags[#flags + 1] = f end
    end
  end

  local out = {}
  out["v"] = 1
  out["kind"] = "exchange"
  out["source"] = "gateway"
  local id = str(rec.request_id)
  if id ~= nil and id ~= "" then
    out["event_id"] = "gateway:" .. id
    out["exchange_id"] = id
  end
  out["ts"] = str(rec.start_time)
  out["observer"] = str(rec.gateway)
  out["server"] = str(rec.upstream_cluster)
  out["http.method"] = str(rec.method)
  local authority = str(rec.authority)
  if authority ~= nil then
    out["url"] = (str(rec.scheme) or "http") .. "://" .. authority .. (str(rec.path) or "")
  end
  out["session_id"] = (req_h and req_h["mcp-session-id"]) or (resp_h and resp_h["mcp-session-id"])
  out["http.request_headers"] = req_h
  out["http.response_headers"] = resp_h
  out["request_body"] = str(rec.request_body) or ""
  out["body_truncated"] = rec.request_body_truncated == true or rec.response_body_truncated == true
  if type(rec.duration_ms) == "number" then out["duration_ms"] = rec.duration_ms end

  if status > 0 then
    out["http.status"] = status
    out["response_body"] = str(rec.response_body) or ""
    local ctype = (resp_h and resp_h["content-type"]) or ""
    if status < 300 and string.sub(ctype, 1, 17) == "text/event-stream" then
      out["stream.complete"] = #flags == 0
      if #flags == 0 then
        out["stream.close_reason"] = "eof"
      else
        out["stream.close_reason"] = first_flag(flags, STREAM_FLAGS, "server_abort")
      end
    end
  else
    local fallback = "no_response"
    if #flags > 0 then fallback = table.concat(flags, ",") end
    out["transport_error"] = first_flag(flags, TRANSPORT_FLAGS, fallback)
  end

  local attrs, has_attrs = {}, false
  if str(rec.route) ~= nil then
    attrs["route"] = rec.route
    has_attrs = true
  end
  if #flags > 0 then
    attrs["response_flags"] = table.concat(flags, ",")
    has_attrs = true
  end
  if has_attrs then out["attrs"] = attrs end

  -- 2: the record changed, the timestamp did not.
  return 2, timestamp, out
end

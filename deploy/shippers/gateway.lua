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

-- Envoy response flags, first match wins. UF and UH: the request never
-- reached the server; DC: the client gave up (its timeout).
local TRANSPORT_FLAGS = {
  { "DC", "timeout" }, { "UF", "connection_refused" }, { "UH", "connection_refused" },
  { "UT", "timeout" }, { "UC", "connection_reset" }, { "UR", "connection_reset" },
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

-- num reads a number, or a string holding one (nginx's escape=json quotes
-- $status and $request_time); nil for anything else.
local function num(v)
  if type(v) == "number" then return v end
  if type(v) == "string" then return tonumber(v) end
  return nil
end

-- unmappable is the event for a record the mapping cannot turn into an
-- exchange: the ingester quarantines it with reason.
local function unmappable(reason, rec)
  local out = {}
  out["v"] = 1
  out["unmappable"] = reason
  out["raw"] = rec
  return out
end

function mcp_contract(tag, timestamp, rec)
  local status = num(rec.status)
  if rec.status == nil then
    return 2, timestamp, unmappable("status missing", rec)
  end
  if status == nil or status < 0 or status > 999 or status ~= math.floor(status) then
    return 2, timestamp, unmappable("status " .. tostring(rec.status) .. " is not an HTTP status", rec)
  end
  if str(rec.method) == nil then
    return 2, timestamp, unmappable("method missing", rec)
  end
  if str(rec.start_time) == nil then
    return 2, timestamp, unmappable("start_time missing", rec)
  end
  local req_h = headers(rec.request_headers, DROPPED_REQUEST_HEADERS)
  local resp_h = headers(rec.response_headers, DROPPED_RESPONSE_HEADERS)
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
  local ua = req_h and req_h["user-agent"]
  if ua ~= nil and ua ~= "" then
    local product = string.match(ua, "^[^ ]*")
    local name, version = string.match(product, "^([^/]*)/(.*)$")
    if name == nil then name = product end
    out["client_name"] = name
    if version ~= nil and version ~= "" then out["client_version"] = version end
  end
  out["session_id"] = (req_h and req_h["mcp-session-id"]) or (resp_h and resp_h["mcp-session-id"])
  out["http.request_headers"] = req_h
  out["http.response_headers"] = resp_h
  out["request_body"] = str(rec.request_body) or ""
  out["body_truncated"] = rec.request_body_truncated == true or rec.response_body_truncated == true
  local ms = num(rec.duration_ms)
  local secs = num(rec.request_time)
  if ms ~= nil and ms >= 0 then
    out["duration_ms"] = ms
  elseif secs ~= nil and secs >= 0 then
    out["duration_ms"] = secs * 1000
  end

  local attrs, has_attrs = {}, false
  local transport = first_flag(flags, TRANSPORT_FLAGS, nil)
  if status == 499 and transport == nil then transport = "timeout" end
  if status > 0 and status < 300 then
    out["http.status"] = status
    out["response_body"] = str(rec.response_body) or ""
    local ctype = (resp_h and resp_h["content-type"]) or ""
    if string.sub(ctype, 1, 17) == "text/event-stream" then
      out["stream.complete"] = #flags == 0
      if #flags == 0 then
        out["stream.close_reason"] = "eof"
      else
        out["stream.close_reason"] = first_flag(flags, STREAM_FLAGS, "server_abort")
      end
    end
  elseif status > 0 and transport == nil then
    out["http.status"] = status
    out["response_body"] = str(rec.response_body) or ""
  else
    local fallback = "no_response"
    if #flags > 0 then fallback = table.concat(flags, ",") end
    out["transport_error"] = transport or fallback
    if status > 0 then
      attrs["gateway_status"] = status
      has_attrs = true
    end
  end
  local dc = status == 499
  for _, f in ipairs(flags) do
    if f == "DC" then dc = true end
  end
  if dc then
    attrs["aborted_by"] = "client"
    has_attrs = true
  end
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

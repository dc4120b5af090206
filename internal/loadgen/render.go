package loadgen

import (
	"strconv"
	"time"
)

var partLetter = [...]byte{partRequest: 'q', partResponse: 'r', partExchange: 'x', partClient: 'c'}

func eventID(c *call, p part) string {
	return "ev-" + strconv.FormatUint(c.seed, 10) + "-" + strconv.Itoa(c.n) + string(partLetter[p])
}

func exchangeID(c *call) string {
	return "x-" + strconv.FormatUint(c.seed, 10) + "-" + strconv.Itoa(c.n)
}

// render appends the line of part p of call c to b.
func (g *Generator) render(b []byte, c *call, p part) []byte {
	ts := c.tReq
	kind := "exchange"
	switch p {
	case partRequest:
		kind = "request"
	case partResponse:
		ts, kind = c.tResp, "response"
	case partClient:
		ts += g.skew[c.slot%g.cfg.Clients]
	}
	b = append(b, `{"v":1,"event_id":`...)
	b = appendStr(b, eventID(c, p))
	b = append(b, `,"ts":"`...)
	b = time.Unix(0, ts).UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z07:00")
	b = append(b, `","kind":"`...)
	b = append(b, kind...)
	if p == partClient {
		b = append(b, `","source":"client","observer":"cli-`...)
		b = strconv.AppendInt(b, int64(c.slot%g.cfg.Clients), 10)
		b = append(b, `","client_name":"`...)
		b = append(b, clientNames[c.slot%len(clientNames)]...)
		b = append(b, `","client_version":"1.`...)
		b = strconv.AppendInt(b, int64(c.slot%7), 10)
		b = append(b, `.0","attempt":`...)
		b = strconv.AppendInt(b, int64(c.attempt), 10)
		b = append(b, `,"retry_origin":`...)
		if c.attempt > 1 {
			b = append(b, `"sdk"`...)
		} else {
			b = append(b, `"none"`...)
		}
		b = append(b, `,"client_outcome":`...)
		if c.plan == planToolOK || c.plan == planToolsList || c.plan == planResourceRead || c.disagree {
			b = append(b, `"success"`...)
		} else {
			b = append(b, `"error"`...)
		}
	} else {
		b = append(b, `","source":"gateway","observer":"gw-`...)
		b = strconv.AppendInt(b, int64(c.slot%g.cfg.Gateways), 10)
		b = append(b, '"')
	}
	b = append(b, `,"server":"`...)
	b = append(b, c.server...)
	b = append(b, `","url":"https://`...)
	b = append(b, c.server...)
	b = append(b, `.mcp.internal/mcp","session_id":"`...)
	b = append(b, c.session...)
	b = append(b, '"')
	if !c.noID {
		b = append(b, `,"exchange_id":"`...)
		b = append(b, exchangeID(c)...)
		b = append(b, '"')
	}
	req := p != partResponse
	resp := p != partRequest
	nested := c.nested[min(int(p), len(c.nested)-1)]
	if nested {
		b = append(b, `,"http":{`...)
	}
	sep := func(name string) {
		if nested {
			if b[len(b)-1] != '{' {
				b = append(b, ',')
			}
			b = append(b, '"')
			b = append(b, name...)
			b = append(b, `":`...)
			return
		}
		b = append(b, `,"http.`...)
		b = append(b, name...)
		b = append(b, `":`...)
	}
	if req {
		sep("method")
		b = append(b, `"POST"`...)
		sep("request_headers")
		b = g.requestHeaders(b, c)
	}
	if resp && c.plan != planTimeout {
		sep("status")
		b = strconv.AppendInt(b, int64(c.status()), 10)
		sep("response_headers")
		b = g.responseHeaders(b, c)
	}
	if nested {
		b = append(b, '}')
	}
	if req {
		b = append(b, `,"request_body":`...)
		b = appendStr(b, g.requestBody(c))
	}
	if resp {
		switch c.plan {
		case planTimeout:
			b = append(b, `,"transport_error":"timeout"`...)
		default:
			b = append(b, `,"response_body":`...)
			b = appendStr(b, g.responseBody(c))
		}
		if c.sse {
			if c.plan == planCutStream {
				b = append(b, `,"stream.complete":false,"stream.close_reason":"reset"`...)
			} else {
				b = append(b, `,"stream.complete":true,"stream.close_reason":"eof"`...)
			}
		}
		if p != partResponse || c.n%2 == 0 {
			b = append(b, `,"duration_ms":`...)
			b = strconv.AppendFloat(b, float64(c.tResp-c.tReq)/float64(time.Millisecond), 'f', 3, 64)
		}
	}
	return append(b, '}')
}

var clientNames = []string{"claude-code", "cursor", "mcp-inspector", "openai-agents", "goose", "vscode-copilot"}

func (c *call) status() int {
	switch c.plan {
	case planRateLimit:
		return 429
	case planUnavailable:
		return 503
	}
	return 200
}

func (g *Generator) requestHeaders(b []byte, c *call) []byte {
	b = append(b, `{"content-type":"application/json","accept":"application/json, text/event-stream","mcp-protocol-version":"2025-11-25","mcp-session-id":"`...)
	b = append(b, c.session...)
	b = append(b, '"')
	if c.secret != "" {
		b = append(b, `,"authorization":"Bearer `...)
		b = append(b, c.secret...)
		b = append(b, `","x-api-key":"`...)
		b = append(b, c.secret...)
		b = append(b, '"')
	}
	return append(b, '}')
}

func (g *Generator) responseHeaders(b []byte, c *call) []byte {
	b = append(b, `{"content-type":"`...)
	switch {
	case c.plan == planUnavailable:
		b = append(b, "text/plain"...)
	case c.sse:
		b = append(b, "text/event-stream"...)
	default:
		b = append(b, "application/json"...)
	}
	b = append(b, `","mcp-session-id":"`...)
	b = append(b, c.session...)
	b = append(b, '"')
	if c.plan == planRateLimit {
		b = append(b, `,"retry-after":"2"`...)
	}
	if c.secret != "" {
		b = append(b, `,"set-cookie":"sid=`...)
		b = append(b, c.secret...)
		b = append(b, `; HttpOnly"`...)
	}
	return append(b, '}')
}

func (g *Generator) requestBody(c *call) string {
	id := strconv.Itoa(c.rpcID)
	switch c.plan {
	case planToolsList:
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list","params":{}}`
	case planResourceRead:
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"resources/read","params":{"uri":"file:///docs/` + strconv.Itoa(c.n) + `.md"}}`
	}
	args := c.args
	if c.secret != "" {
		args = args[:len(args)-1] + `,"api_key":"` + c.secret + `"}`
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + c.tool + `","arguments":` + args + `}}`
}

// text returns the call's filler text, about n bytes.
func (g *Generator) text(c *call, n int) string {
	n = max(n, 16)
	t := string(g.filler[c.fillerAt : c.fillerAt+n])
	if c.badUTF8 {
		t = t[:n/2] + "\xff\xfe\xc3" + t[n/2:]
	}
	return t
}

func (g *Generator) responseBody(c *call) string {
	id := strconv.Itoa(c.rpcID)
	var msg string
	switch c.plan {
	case planRateLimit:
		return `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Too many requests"},"id":null}`
	case planUnavailable:
		return "upstream connect error or disconnect/reset before headers. reset reason: overflow"
	case planRPCError:
		msg = `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32602,"message":"Invalid params: limit out of range"}}`
	case planToolError:
		msg = `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":` + string(appendStr(nil, "error: "+g.text(c, c.bodyBytes-100))) + `}],"isError":true}}`
	case planToolsList:
		msg = `{"jsonrpc":"2.0","id":` + id + `,"result":{"tools":[` + toolsList + `]}}`
	case planResourceRead:
		msg = `{"jsonrpc":"2.0","id":` + id + `,"result":{"contents":[{"uri":"file:///docs/` + strconv.Itoa(c.n) + `.md","mimeType":"text/markdown","text":` + string(appendStr(nil, g.text(c, c.bodyBytes-120))) + `}]}}`
	default:
		text := g.text(c, c.bodyBytes-100)
		if c.n%2 == 1 { // a JSON document as the tool's text: JSON in JSON in JSON
			text = `{"rows":[{"id":` + id + `,"note":` + string(appendStr(nil, text)) + `}]}`
		}
		msg = `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":` + string(appendStr(nil, text)) + `}],"isError":false}}`
	}
	if !c.sse {
		return msg
	}
	progress := `data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":` + id + `,"progress":1}}` + "\n\n"
	if c.plan == planCutStream {
		return "event: message\n" + progress + "event: message\ndata: " + msg[:len(msg)/3]
	}
	return "event: message\n" + progress + "id: " + id + "\nevent: message\ndata: " + msg + "\n\n"
}

const toolsList = `{"name":"search","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},` +
	`{"name":"fetch_page","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true,"openWorldHint":true}},` +
	`{"name":"write_file","inputSchema":{"type":"object"},"annotations":{"destructiveHint":true}},` +
	`{"name":"run_query","inputSchema":{"type":"object"}},` +
	`{"name":"lookup","inputSchema":{"type":"object"},"annotations":{"idempotentHint":true}}`

// poison returns a line that is not a valid event.
func (g *Generator) poison() []byte {
	n := strconv.Itoa(g.truth.Poison)
	switch g.rng.IntN(24) {
	case 0:
		huge := make([]byte, 0, 900<<10+64)
		huge = append(huge, `{"event_id":"poison-huge-`+n+`","request_body":"`...)
		for len(huge) < 900<<10 {
			huge = append(huge, "xxxxxxxxxxxxxxxx"...)
		}
		return huge // never closed
	case 1, 2, 3:
		return []byte("GET /mcp HTTP/1.1 not a log line " + n)
	case 4, 5, 6:
		return []byte(`{"v":1,"event_id":"poison-cut-` + n + `","ts":"2026-11-02T10:00:00Z","kind":"requ`)
	case 7, 8, 9:
		return []byte(`{"v":1,"event_id":"poison-nots-` + n + `","kind":"request","source":"gateway","http.method":"POST","request_body":"{}"}`)
	case 10, 11, 12:
		return []byte("{\"v\":1,\x00\x00\"event_id\":\"poison-nul-" + n + "\"}")
	case 13, 14, 15:
		return []byte(`{"v":1,"event_id":"poison-kind-` + n + `","ts":"2026-11-02T10:00:00Z","kind":"bogus","source":"gateway"}`)
	case 16, 17, 18:
		return []byte(`[1,2,3]`)
	default:
		return []byte(`{"v":1,"event_id":"poison-status-` + n + `","ts":"2026-11-02T10:00:00Z","kind":"response","source":"gateway","http.status":"two hundred","response_body":"{}"}`)
	}
}

// appendStr appends s as a JSON string. Bytes that are not valid UTF-8
// pass through raw on purpose: loggers write them, and the pipeline must
// cope.
func appendStr(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch >= 0x20 && ch != '"' && ch != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch ch {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[ch>>4], hex[ch&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const hex = "0123456789abcdef"

package tap

import (
	"bytes"
	"encoding/json"
	"strings"
)

// metaClientInfo is the 2026-07-28 per-request _meta key naming the client.
const metaClientInfo = "io.modelcontextprotocol/clientInfo"

// implementation is MCP's Implementation object (clientInfo).
type implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// clientInfo names the MCP client of one request: the initialize request's
// params.clientInfo, else the 2026 params._meta clientInfo, else the first
// product of the User-Agent ("Go-http-client/1.1" gives name
// "Go-http-client", version "1.1"). A body that does not parse is not an
// error here: it falls through to the User-Agent.
func clientInfo(body, userAgent string) (name, version string) {
	if strings.Contains(body, "clientInfo") {
		if impl, ok := bodyClientInfo([]byte(body)); ok {
			return impl.Name, impl.Version
		}
	}
	product, _, _ := strings.Cut(strings.TrimSpace(userAgent), " ")
	name, version, _ = strings.Cut(product, "/")
	return name, version
}

// bodyClientInfo looks through one JSON-RPC message or a batch of them.
func bodyClientInfo(body []byte) (implementation, bool) {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(body, &batch); err != nil {
			return implementation{}, false
		}
		for _, msg := range batch {
			if impl, ok := messageClientInfo(msg); ok {
				return impl, true
			}
		}
		return implementation{}, false
	}
	return messageClientInfo(body)
}

func messageClientInfo(msg []byte) (implementation, bool) {
	var req struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(msg, &req); err != nil || len(req.Params) == 0 {
		return implementation{}, false
	}
	var params struct {
		ClientInfo *implementation             `json:"clientInfo"`
		Meta       map[string]*json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(req.Params, &params); err != nil {
		return implementation{}, false
	}
	if req.Method == "initialize" && params.ClientInfo != nil && params.ClientInfo.Name != "" {
		return *params.ClientInfo, true
	}
	if raw := params.Meta[metaClientInfo]; raw != nil {
		var impl implementation
		if err := json.Unmarshal(*raw, &impl); err == nil && impl.Name != "" {
			return impl, true
		}
	}
	return implementation{}, false
}

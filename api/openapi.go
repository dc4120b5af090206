package api

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

// document is the OpenAPI 3.1 document of the API: the contract. The
// tests hold the router and every response to it.
//
//go:embed openapi.json
var document []byte

// renderDocument returns the document with this server's limits: the
// maximum and default of the limit parameter.
func renderDocument(cfg Config) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(document, &doc); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	schema, ok := dig(doc, "components", "parameters", "limit", "schema")
	if !ok {
		return nil, fmt.Errorf("openapi.json: no components.parameters.limit.schema")
	}
	schema["maximum"] = cfg.MaxLimit
	schema["default"] = cfg.defaultLimit()
	return json.MarshalIndent(doc, "", "  ")
}

// dig follows keys through nested JSON objects.
func dig(v map[string]any, keys ...string) (map[string]any, bool) {
	for _, k := range keys {
		next, ok := v[k].(map[string]any)
		if !ok {
			return nil, false
		}
		v = next
	}
	return v, true
}

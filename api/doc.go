// Package api is mcplens' REST API: a Gin router over a [queries.Store]
// that answers the questions about recorded MCP traffic under /api/v1,
// with bearer-token auth and scopes, RFC 9457 problem details for every
// error, request metrics and access logs, and an OpenAPI 3.1 document
// (served at /openapi.json) that is the contract the tests hold the
// handlers to.
//
// Every store call runs under Config.QueryTimeout; a store that does not
// answer in time, or cannot be reached, gives 503, never a hang. Values
// reach the store only as typed parameters of [queries.Store], which binds
// them as SQL parameters.
package api

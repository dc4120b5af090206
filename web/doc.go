// Package web is mcplens' built-in web view: server-rendered HTML pages
// over the REST API, for a team that has no Grafana.
//
// Every page is a client of the API: the view calls the API's handler in
// process with the visitor's token, so it answers exactly what the API
// answers to that token (the same scopes, the same validation of times
// and limits, the same rate limit). The token comes from the login form
// and lives only in an HttpOnly, SameSite=Strict cookie; it is never put
// in a URL or a log line. Forms that change state (login, logout) check
// the Origin and a double-submit CSRF token.
//
// Pages are html/template and one stylesheet, embedded in the binary;
// the charts are SVG drawn on the server; no script runs in the page, and
// the Content-Security-Policy says so.
package web

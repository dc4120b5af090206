package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// contract checks responses against the OpenAPI document: the status is
// documented for the operation, the content type is one it lists, its
// required headers are present and the body validates against the
// schema (JSON Schema 2020-12, the dialect of OpenAPI 3.1).
type contract struct {
	paths      map[string]any
	responses  map[string]any
	defs       map[string]any
	mu         sync.Mutex
	validators map[string]*jsonschema.Resolved
	seen       map[string]bool // "path status" answered and checked
}

var testContract = loadContract(document)

func loadContract(doc []byte) *contract {
	// Component schemas become $defs of each validated schema.
	text := strings.ReplaceAll(string(doc), `"#/components/schemas/`, `"#/$defs/`)
	var d map[string]any
	if err := json.Unmarshal([]byte(text), &d); err != nil {
		panic(err)
	}
	comp := d["components"].(map[string]any)
	return &contract{
		paths: d["paths"].(map[string]any), responses: comp["responses"].(map[string]any),
		defs: comp["schemas"].(map[string]any), validators: map[string]*jsonschema.Resolved{}, seen: map[string]bool{},
	}
}

// match returns the documented path template of a request path (escaped
// form: %2F stays inside its segment).
func (k *contract) match(escapedPath string) (string, bool) {
	segs := strings.Split(escapedPath, "/")
	for tpl := range k.paths {
		ts := strings.Split(tpl, "/")
		if len(ts) != len(segs) {
			continue
		}
		ok := true
		for i := range ts {
			if strings.HasPrefix(ts[i], "{") {
				ok = ok && segs[i] != ""
			} else {
				ok = ok && ts[i] == segs[i]
			}
		}
		if ok {
			return tpl, true
		}
	}
	return "", false
}

func (k *contract) check(t testing.TB, req *http.Request, rec *httptest.ResponseRecorder) {
	t.Helper()
	if err := k.checkResponse(req, rec); err != nil {
		t.Errorf("%s %s: response breaks the OpenAPI document: %v\nbody: %.600s", req.Method, req.URL, err, rec.Body.String())
	}
}

func (k *contract) checkResponse(req *http.Request, rec *httptest.ResponseRecorder) error {
	tpl, ok := k.match(req.URL.EscapedPath())
	item, _ := k.paths[tpl].(map[string]any)
	op, hasOp := item[strings.ToLower(req.Method)].(map[string]any)
	if !ok || !hasOp {
		// Unknown paths and methods: a problem, 404 or 405 (CORS preflights 204).
		if rec.Code == http.StatusNoContent && req.Method == http.MethodOptions {
			return nil
		}
		if rec.Code != http.StatusNotFound && rec.Code != http.StatusMethodNotAllowed && rec.Code != http.StatusRequestEntityTooLarge {
			return fmt.Errorf("undocumented path answered %d", rec.Code)
		}
		return k.validate("Problem", map[string]any{"$ref": "#/$defs/Problem"}, rec.Body.Bytes())
	}
	status := strconv.Itoa(rec.Code)
	resp, ok := op["responses"].(map[string]any)[status].(map[string]any)
	if !ok {
		return fmt.Errorf("status %s is not documented for GET %s", status, tpl)
	}
	if ref, ok := resp["$ref"].(string); ok {
		resp = k.responses[strings.TrimPrefix(ref, "#/components/responses/")].(map[string]any)
	}
	headers, _ := resp["headers"].(map[string]any)
	for name, h := range headers {
		if h.(map[string]any)["required"] == true && rec.Header().Get(name) == "" {
			return fmt.Errorf("status %s lacks the required header %s", status, name)
		}
	}
	mt, _, err := mime.ParseMediaType(rec.Header().Get("Content-Type"))
	if err != nil {
		return fmt.Errorf("content type %q: %w", rec.Header().Get("Content-Type"), err)
	}
	media, ok := resp["content"].(map[string]any)[mt].(map[string]any)
	if !ok {
		return fmt.Errorf("content type %s is not documented for status %s of GET %s", mt, status, tpl)
	}
	k.mu.Lock()
	k.seen[tpl+" "+status] = true
	k.mu.Unlock()
	if !strings.HasSuffix(mt, "json") {
		return nil
	}
	return k.validate(tpl+" "+status+" "+mt, media["schema"].(map[string]any), rec.Body.Bytes())
}

// validate checks body against schema, compiled once per key.
func (k *contract) validate(key string, schema map[string]any, body []byte) error {
	v, err := k.compiled(key, schema)
	if err != nil {
		return err
	}
	var instance any
	if err := json.Unmarshal(body, &instance); err != nil {
		return fmt.Errorf("body is not JSON: %w", err)
	}
	return v.Validate(instance)
}

// compiled returns the validator of schema (with the component schemas as
// $defs), compiling it on first use.
func (k *contract) compiled(key string, schema map[string]any) (*jsonschema.Resolved, error) {
	k.mu.Lock()
	v, ok := k.validators[key]
	k.mu.Unlock()
	if !ok {
		root := map[string]any{"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": k.defs}
		for kk, vv := range schema {
			root[kk] = vv
		}
		b, err := json.Marshal(root)
		if err != nil {
			return nil, err
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("schema of %s: %w", key, err)
		}
		if v, err = s.Resolve(nil); err != nil {
			return nil, fmt.Errorf("resolve schema of %s: %w", key, err)
		}
		k.mu.Lock()
		k.validators[key] = v
		k.mu.Unlock()
	}
	return v, nil
}

// coverage reports documented operations whose every status the tests
// never saw answered: each operation's 200, and every documented status of
// at least one operation.
func (k *contract) coverage() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	var missing []string
	statuses := map[string]bool{}
	for tpl, item := range k.paths {
		op := item.(map[string]any)["get"].(map[string]any)
		for status := range op["responses"].(map[string]any) {
			statuses[status] = statuses[status] || k.seen[tpl+" "+status]
		}
		if !k.seen[tpl+" 200"] {
			missing = append(missing, "GET "+tpl+" 200")
		}
	}
	for status, seen := range statuses {
		if !seen {
			missing = append(missing, "status "+status+" of any operation")
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return errors.New("the tests never checked these documented responses against the OpenAPI document:\n  " + strings.Join(missing, "\n  "))
	}
	return nil
}

// TestContractCatchesViolations: the checker the other tests rely on
// rejects what breaks the document.
func TestContractCatchesViolations(t *testing.T) {
	resp := func(status int, ct, body string, headers ...string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		rec.Header().Set("Content-Type", ct)
		for i := 0; i+1 < len(headers); i += 2 {
			rec.Header().Set(headers[i], headers[i+1])
		}
		rec.WriteHeader(status)
		rec.Body.WriteString(body)
		return rec
	}
	req := httptest.NewRequest(http.MethodGet, "/api/v1/servers", nil)
	good := `{"from":"2026-11-01T00:00:00Z","to":"2026-11-02T00:00:00Z","limit":1,"truncated":false,"order_by":"volume","rows":[]}`
	if err := testContract.checkResponse(req, resp(200, "application/json", good)); err != nil {
		t.Fatalf("a good answer fails: %v", err)
	}
	for name, rec := range map[string]*httptest.ResponseRecorder{
		"missing rows":           resp(200, "application/json", `{"from":"2026-11-01T00:00:00Z","to":"2026-11-02T00:00:00Z","limit":1,"truncated":false,"order_by":"volume"}`),
		"null rows":              resp(200, "application/json", strings.Replace(good, `[]`, `null`, 1)),
		"wrong row type":         resp(200, "application/json", strings.Replace(good, `[]`, `[{"group_key":1}]`, 1)),
		"bad enum":               resp(200, "application/json", strings.Replace(good, `volume`, `size`, 1)),
		"undocumented status":    resp(418, problemJSON, `{"type":"x","title":"x","status":418,"detail":"x"}`),
		"wrong content type":     resp(200, "text/plain", good),
		"problem without detail": resp(400, problemJSON, `{"type":"x","title":"x","status":400}`),
		"401 without challenge":  resp(401, problemJSON, `{"type":"x","title":"x","status":401,"detail":"x"}`),
		"not JSON":               resp(200, "application/json", `{`),
	} {
		if err := testContract.checkResponse(req, rec); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

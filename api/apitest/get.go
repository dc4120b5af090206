package apitest

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// GetJSON sends GET url and, when the answer is 200 and out is not nil,
// decodes its body into out (a body that does not decode fails the
// test). It returns the status and the body.
func GetJSON(t testing.TB, url string, out any) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url) //nolint:gosec,noctx // G107: a test's own server
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("GET %s: %v\n%s", url, err, body)
		}
	}
	return resp.StatusCode, body
}

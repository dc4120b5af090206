package web_test

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"

	"github.com/mcplens/mcplens/api/apitest"
	"github.com/mcplens/mcplens/schema"
)

// corpusRows reads the exchanges and bodies of the conformance corpus
// straight from its file: the tests' own account of what the pages must
// show.
func corpusRows(t testing.TB) (exchanges []schema.Exchange, bodies map[string]schema.Body) {
	t.Helper()
	f, err := os.Open(apitest.CorpusPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bodies = map[string]schema.Body{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var line struct {
			Table string          `json:"table"`
			Row   json.RawMessage `json:"row"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		switch line.Table {
		case "exchanges":
			var x schema.Exchange
			if err := json.Unmarshal(line.Row, &x); err != nil {
				t.Fatal(err)
			}
			exchanges = append(exchanges, x)
		case "exchange_bodies":
			var b schema.Body
			if err := json.Unmarshal(line.Row, &b); err != nil {
				t.Fatal(err)
			}
			bodies[b.ExchangeID] = b
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return exchanges, bodies
}

// failed reports whether an outcome counts as a failure on the pages.
func failed(outcome string) bool {
	switch outcome {
	case "SUCCESS", "TOOL_SUCCESS", "ACCEPTED", "INPUT_REQUIRED", "CANCELLED", "UNVERIFIED":
		return false
	}
	return true
}

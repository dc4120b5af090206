package api

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/mcplens/mcplens/api/apitest"
	"github.com/mcplens/mcplens/queries/querytest"
)

// TestExchangeChain asks for every exchange of the corpus that is part of
// a chain (on DuckDB, or on ClickHouse with MCPLENS_TEST_ENGINE): the view
// has one chain list (no second list of retries or rounds), the exchange
// is in it as the API's record says, the chain is the corpus's chain in
// time order, and retry_origin says the same thing on every link: "none"
// exactly on first attempts, never empty.
func TestExchangeChain(t *testing.T) {
	a := newTestAPI(t, corpusStore(t))
	corpus, err := querytest.ReadCorpus(apitest.CorpusPath())
	if err != nil {
		t.Fatal(err)
	}
	members := map[string][]string{}
	for _, x := range corpus.Exchanges {
		members[x.ChainID] = append(members[x.ChainID], x.ExchangeID)
	}
	asked, retries, rounds := 0, 0, 0
	for _, x := range corpus.Exchanges {
		if len(members[x.ChainID]) < 2 {
			continue
		}
		asked++
		rec := a.get("/api/v1/exchanges/"+x.ExchangeID, readToken)
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(rec.Body.Bytes(), &keys); err != nil || rec.Code != 200 {
			t.Fatalf("%s: %d %s", x.ExchangeID, rec.Code, rec.Body.String())
		}
		if got := slices.Sorted(maps.Keys(keys)); !slices.Equal(got, []string{"bodies", "body", "chain", "exchange"}) {
			t.Errorf("%s: the view has %v, want one chain list", x.ExchangeID, got)
		}
		b := decode[exchangeBody](t, rec, 200)
		var ids []string
		self := false
		for i, l := range b.Chain {
			ids = append(ids, l.ExchangeID)
			if i > 0 && l.TS.Before(b.Chain[i-1].TS) {
				t.Errorf("%s: chain out of time order at %s", x.ExchangeID, l.ExchangeID)
			}
			first := l.RetryOf == "" && l.Attempt <= 1
			if l.RetryOrigin == "" || first != (l.RetryOrigin == "none") {
				t.Errorf("%s: link %s (attempt %d, retry_of %q, continues %q) has retry_origin %q",
					x.ExchangeID, l.ExchangeID, l.Attempt, l.RetryOf, l.Continues, l.RetryOrigin)
			}
			if l.RetryOf != "" {
				retries++
			}
			if l.Continues != "" {
				rounds++
			}
			if l.ExchangeID == x.ExchangeID {
				self = true
				if l.RetryOrigin != b.Exchange.RetryOrigin || l.Attempt != int64(b.Exchange.Attempt) || l.RetryOf != b.Exchange.RetryOf {
					t.Errorf("%s: its link says %+v, its record attempt %d retry_of %q retry_origin %q",
						x.ExchangeID, l, b.Exchange.Attempt, b.Exchange.RetryOf, b.Exchange.RetryOrigin)
				}
			}
		}
		if !self {
			t.Errorf("%s: not in its own chain %v", x.ExchangeID, ids)
		}
		if want := members[x.ChainID]; !slices.Equal(slices.Sorted(slices.Values(ids)), slices.Sorted(slices.Values(want))) {
			t.Errorf("%s: chain %v, the corpus's chain %s is %v", x.ExchangeID, ids, x.ChainID, want)
		}
	}
	if asked == 0 || retries == 0 || rounds == 0 {
		t.Errorf("asked %d chained exchanges, saw %d retry links and %d MRTR rounds: the corpus lacks what this test checks", asked, retries, rounds)
	}
}

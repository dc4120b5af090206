package loadgen

import (
	"bytes"
	"container/heap"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"time"

	"github.com/mcplens/mcplens/classify"
)

// plan is what a call turns out to be.
type plan uint8

const (
	planToolOK plan = iota
	planToolError
	planRPCError
	planRateLimit
	planUnavailable
	planCutStream
	planTimeout
	planNoResponse
	planToolsList
	planResourceRead
)

// outcome is what the classifier must say of a call of plan p.
func (p plan) outcome() classify.Outcome {
	switch p {
	case planToolError:
		return classify.ToolError
	case planRPCError:
		return classify.JSONRPCError
	case planRateLimit, planUnavailable:
		return classify.HTTPError
	case planCutStream:
		return classify.StreamIncomplete
	case planTimeout:
		return classify.TransportError
	case planNoResponse:
		return classify.NoResponse
	case planToolsList, planResourceRead:
		return classify.Success
	}
	return classify.ToolSuccess
}

// call is one HTTP call, planned when it starts and rendered line by line.
type call struct {
	n          int // index in Truth.Calls
	seed       uint64
	slot       int // session slot
	session    string
	server     string
	rpcID      int
	plan       plan
	split      bool // a request and a response record, else one exchange record
	sse        bool
	noID       bool // no logger records an exchange_id
	client     bool // the client logs it too
	attempt    int
	retryOf    *call
	tReq       int64 // Unix ns
	tResp      int64
	bodyBytes  int
	fillerAt   int
	tool, args string
	secret     string
	badUTF8    bool
	disagree   bool // the client concludes "success" for a tool error
	nested     [3]bool
}

// part names which line of a call an item renders.
type part uint8

const (
	partRequest part = iota
	partResponse
	partExchange
	partClient
	partResend // not a line: the start of a re-send
	partRaw    // a redelivered line, already rendered
)

type item struct {
	at   int64
	seq  uint64
	c    *call
	part part
	raw  []byte
	key  string
}

type itemHeap []item

func (h itemHeap) Len() int { return len(h) }
func (h itemHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h itemHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *itemHeap) Push(x any)   { *h = append(*h, x.(item)) }
func (h *itemHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = item{}
	*h = old[:len(old)-1]
	return it
}

// Generator produces the lines of one load. It is not safe for concurrent
// use; build one with [New].
type Generator struct {
	cfg       Config
	rng       *rand.Rand
	items     itemHeap
	seq       uint64
	fresh     int
	nextStart int64
	rpcIDs    []int
	skew      []int64 // per client host, ns
	filler    []byte
	truth     *Truth
	buf       []byte
	nextCall  int
	at        int64 // observation time of the line last yielded
}

// At returns when the line last yielded was observed (written by its
// logger): the time a paced replay should deliver it.
func (g *Generator) At() time.Time { return time.Unix(0, g.at).UTC() }

// New validates cfg (zero fields take their defaults) and returns a
// generator. Ground truth per call is kept with cfg.KeepTruth.
func New(cfg Config) (*Generator, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.EndNow {
		span := time.Duration(float64(cfg.Calls) / cfg.Rate * float64(time.Second))
		cfg.Start = time.Now().UTC().Add(-span).Truncate(time.Second)
	}
	g := &Generator{
		cfg:       cfg,
		rng:       rand.New(rand.NewPCG(cfg.Seed, 0x6d63706c656e73)), //nolint:gosec // G404: test traffic, seeded on purpose
		nextStart: cfg.Start.UnixNano(),
		rpcIDs:    make([]int, cfg.Sessions),
		skew:      make([]int64, cfg.Clients),
		truth:     &Truth{keep: cfg.KeepTruth},
	}
	for i := range g.skew {
		g.skew[i] = int64((g.rng.Float64()*2 - 1) * float64(cfg.ClientSkew))
	}
	// 64 KiB of filler, the size every shape so far was generated with, or
	// more when a body may be longer: a call's text starts at a random
	// offset at least its largest body before the end.
	filler := 64 << 10
	if cfg.MaxBody+32 > filler {
		filler = 2*cfg.MaxBody + 32
	}
	g.filler = makeFiller(g.rng, filler)
	return g, nil
}

// Config returns the configuration in force, defaults filled in.
func (g *Generator) Config() Config { return g.cfg }

// Truth returns what the lines generated so far must produce.
func (g *Generator) Truth() *Truth { return g.truth }

// Lines yields every line with its Kafka key (the session id, so both
// halves of an exchange share a partition; empty for poison lines) in
// observation order. The slices are valid only until the next iteration.
// A Generator yields its lines once.
func (g *Generator) Lines() iter.Seq2[[]byte, []byte] {
	return func(yield func(key, line []byte) bool) {
		for g.fresh < g.cfg.Calls || len(g.items) > 0 {
			if len(g.items) > 0 && (g.fresh >= g.cfg.Calls || g.items[0].at <= g.nextStart) {
				it := heap.Pop(&g.items).(item)
				if !g.emit(it, yield) {
					return
				}
				continue
			}
			g.start(g.nextStart, nil)
			g.fresh++
			g.nextStart += int64(g.rng.ExpFloat64() / g.cfg.Rate * float64(time.Second))
		}
	}
}

// Load generates cfg's load with its truth kept (Config.KeepTruth) and
// returns the generator, for its Truth and Config, and every line, each
// a copy of its own, in observation order.
func Load(cfg Config) (*Generator, [][]byte, error) {
	cfg.KeepTruth = true
	g, err := New(cfg)
	if err != nil {
		return nil, nil, err
	}
	var lines [][]byte
	for _, line := range g.Lines() {
		lines = append(lines, bytes.Clone(line))
	}
	return g, lines, nil
}

func (g *Generator) push(at int64, c *call, p part) {
	g.seq++
	heap.Push(&g.items, item{at: at, seq: g.seq, c: c, part: p})
}

func (g *Generator) chance(p float64) bool { return p > 0 && g.rng.Float64() < p }

// logUniform draws from lo..hi with a uniform logarithm.
func (g *Generator) logUniform(lo, hi float64) float64 {
	return math.Exp(math.Log(lo) + g.rng.Float64()*(math.Log(hi)-math.Log(lo)))
}

func (g *Generator) jitter() int64 { return g.rng.Int64N(int64(g.cfg.Jitter)) }

// start plans a call beginning at t: a first attempt, or a re-send of prev.
func (g *Generator) start(t int64, prev *call) {
	cfg := &g.cfg
	c := &call{n: g.nextCall, seed: cfg.Seed, tReq: t, attempt: 1}
	g.nextCall++
	if prev != nil {
		c.slot, c.session, c.server, c.tool, c.args = prev.slot, prev.session, prev.server, prev.tool, prev.args
		c.noID, c.secret, c.attempt, c.retryOf = prev.noID, prev.secret, prev.attempt+1, prev
		c.plan = planToolOK
		if c.attempt < 3 && g.chance(0.2) {
			c.plan = planRateLimit
		}
	} else {
		c.slot = g.rng.IntN(cfg.Sessions)
		epoch := time.Duration(t-cfg.Start.UnixNano()) / (7 * time.Minute)
		c.session = fmt.Sprintf("sess-%04d-%d", c.slot, epoch)
		c.server = fmt.Sprintf("srv-%d", c.slot%cfg.ServerSet)
		c.noID = g.chance(cfg.NoIDShare)
		c.plan = g.pickPlan()
		c.tool = tools[g.rng.IntN(len(tools))]
		c.args = fmt.Sprintf(`{"query":"q-%d-%d","limit":%d}`, cfg.Seed, c.n, 1+c.n%50)
		if g.chance(cfg.SecretShare) {
			c.secret = fmt.Sprintf("sk-live-%016x%08x", g.rng.Uint64(), c.n)
			if len(g.truth.Secrets) < 256 {
				g.truth.Secrets = append(g.truth.Secrets, c.secret)
			}
		}
	}
	g.rpcIDs[c.slot]++
	c.rpcID = g.rpcIDs[c.slot]
	c.split = !g.chance(cfg.ExchangeShare) || c.plan == planNoResponse
	if c.noID && c.split && c.plan != planToolOK && c.plan != planToolError && c.plan != planRPCError && c.plan != planNoResponse {
		// Without an exchange id only the JSON-RPC id pairs the halves, and
		// these answers carry none (id null, plain text, a cut stream, no
		// response at all): a gateway that logs no request id logs them
		// as one exchange record.
		c.split = false
	}
	c.sse = c.plan == planCutStream || (c.plan == planToolOK && g.chance(cfg.SSEShare))
	c.client = g.chance(cfg.ClientShare) && c.plan != planNoResponse
	c.disagree = c.client && c.plan == planToolError && g.chance(cfg.ClientDisagreeRate)
	c.badUTF8 = g.chance(cfg.BadUTF8Share)
	for i := range c.nested {
		c.nested[i] = g.chance(cfg.NestedShare)
	}
	delay := int64(g.logUniform(float64(cfg.MinDelay), float64(cfg.MaxDelay)))
	if c.plan == planTimeout {
		delay = int64(cfg.MaxDelay)
	}
	c.tResp = t + delay
	c.bodyBytes = int(g.logUniform(float64(cfg.MinBody), float64(cfg.MaxBody)))
	c.fillerAt = g.rng.IntN(len(g.filler) - cfg.MaxBody - 1)
	giveUp := int64(0)
	if prev == nil && c.split && delay > int64(2*time.Second) &&
		(c.plan == planToolOK || c.plan == planToolError || c.plan == planRPCError) && g.chance(cfg.GiveUpShare) {
		// The client stops waiting and sends the call again; this attempt
		// runs on, and the client logs nothing of it.
		giveUp = t + int64(float64(delay)*(0.2+0.6*g.rng.Float64()))
		c.client, c.disagree = false, false
	}
	g.truth.add(c)

	if c.split {
		g.push(t+g.jitter(), c, partRequest)
		if c.plan != planNoResponse {
			g.push(c.tResp+g.jitter(), c, partResponse)
		}
	} else {
		g.push(c.tResp+g.jitter(), c, partExchange)
	}
	if c.client {
		at := c.tResp + g.jitter()
		if !cfg.ClientShipped {
			at += g.skew[c.slot%cfg.Clients]
		}
		g.push(at, c, partClient)
	}
	if giveUp > 0 {
		g.push(giveUp, c, partResend)
	}
	if c.plan == planRateLimit || c.plan == planUnavailable {
		backoff := int64(time.Second) + g.rng.Int64N(int64(4*time.Second))
		g.push(c.tResp+backoff, c, partResend)
	}
}

func (g *Generator) pickPlan() plan {
	cfg := &g.cfg
	x := g.rng.Float64()
	for _, s := range []struct {
		share float64
		p     plan
	}{
		{cfg.ToolErrorShare, planToolError}, {cfg.RPCErrorShare, planRPCError}, {cfg.RateLimitShare, planRateLimit},
		{cfg.UnavailableShare, planUnavailable}, {cfg.CutStreamShare, planCutStream}, {cfg.TimeoutShare, planTimeout},
		{cfg.NoResponseShare, planNoResponse}, {cfg.NonToolShare / 2, planToolsList}, {cfg.NonToolShare / 2, planResourceRead},
	} {
		if x < s.share {
			return s.p
		}
		x -= s.share
	}
	return planToolOK
}

// emit renders an item and yields it (and maybe a poison line before it).
func (g *Generator) emit(it item, yield func(key, line []byte) bool) bool {
	g.at = it.at
	switch it.part {
	case partResend:
		g.start(it.at, it.c)
		return true
	case partRaw:
		g.truth.Lines++
		g.truth.Redelivered++
		return yield([]byte(it.key), it.raw)
	}
	if g.chance(g.cfg.PoisonShare) {
		g.truth.Lines++
		g.truth.Poison++
		if !yield(nil, g.poison()) {
			return false
		}
	}
	g.buf = g.render(g.buf[:0], it.c, it.part)
	g.truth.Lines++
	g.truth.Events++
	if g.chance(g.cfg.RedeliverShare) {
		g.seq++
		again := int64(50*time.Millisecond) + g.rng.Int64N(int64(5*time.Second))
		heap.Push(&g.items, item{at: it.at + again, seq: g.seq, part: partRaw, raw: append([]byte(nil), g.buf...), key: it.c.session})
	}
	return yield([]byte(it.c.session), g.buf)
}

var tools = []string{"search", "fetch_page", "write_file", "run_query", "lookup"}

// makeFiller returns n bytes of word-like ASCII text.
func makeFiller(rng *rand.Rand, n int) []byte {
	words := []string{"lorem", "ipsum", "dolor", "sit", "amet", "result", "row", "value", "mcp", "tool",
		"alpha", "beta", "gamma", "delta", "status", "ok", "page", "index", "cache", "node", "v2", "2026", "id"}
	b := make([]byte, 0, n+16)
	for len(b) < n {
		b = append(b, words[rng.IntN(len(words))]...)
		switch rng.IntN(12) {
		case 0:
			b = append(b, ", "...)
		case 1:
			b = append(b, ". "...)
		default:
			b = append(b, ' ')
		}
	}
	return b[:n]
}

package api

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// rateLimits holds one token bucket per principal (token name). Tokens are
// a fixed set, so the map is bounded.
type rateLimits struct {
	perSecond rate.Limit
	burst     int

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
}

func newRateLimits(perSecond float64, burst int) *rateLimits {
	return &rateLimits{perSecond: rate.Limit(perSecond), burst: burst, buckets: map[string]*rate.Limiter{}}
}

// allow takes one request from key's bucket; when the bucket is empty it
// returns false and the whole seconds until a request would be allowed.
func (r *rateLimits) allow(key string, now time.Time) (bool, int) {
	r.mu.Lock()
	l, ok := r.buckets[key]
	if !ok {
		l = rate.NewLimiter(r.perSecond, r.burst)
		r.buckets[key] = l
	}
	r.mu.Unlock()
	res := l.ReserveN(now, 1)
	if !res.OK() {
		return false, 1
	}
	delay := res.DelayFrom(now)
	if delay <= 0 {
		return true, 0
	}
	res.CancelAt(now)
	return false, max(1, int(math.Ceil(delay.Seconds())))
}

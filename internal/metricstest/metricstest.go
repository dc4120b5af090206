// Package metricstest reads a running binary's Prometheus metrics in
// tests that drive it from outside.
package metricstest

import (
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Sums scrapes http://addr/metrics and sums each metric family over its
// labels; a family the binary exports has a key, so a missing key tells
// "not exported (yet)" from 0. It returns nil when the scrape fails.
func Sums(addr string) map[string]float64 {
	resp, err := http.Get("http://" + addr + "/metrics") //nolint:noctx // a test's short scrape of a local port
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil
	}
	sums := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		name, _, _ := strings.Cut(line, " ")
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name = name[:i]
		}
		if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
			sums[name] += v
		}
	}
	return sums
}

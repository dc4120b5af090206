package web

import (
	"fmt"
	"time"
)

// breakdownRow is one row of /api/v1/outcomes.
type breakdownRow struct {
	Bucket    time.Time `json:"bucket"`
	GroupKey  string    `json:"group_key"`
	Layer     string    `json:"layer"`
	Outcome   string    `json:"outcome"`
	Exchanges int64     `json:"exchanges_n"`
}

// breakdownBuckets are the buckets of /api/v1/outcomes, finest first.
var breakdownBuckets = []struct {
	name string
	step time.Duration
}{{"1m", time.Minute}, {"5m", 5 * time.Minute}, {"1h", time.Hour}, {"1d", 24 * time.Hour}}

// rowsPerBucket is about how many (layer, outcome) rows a busy bucket
// of /api/v1/outcomes has.
const rowsPerBucket = 8

// bucketIndex picks the finest bucket that draws a span in at most 360
// bars and whose rows likely fit in maxRows.
func bucketIndex(span time.Duration, maxRows int) int {
	for i, b := range breakdownBuckets {
		n := int(span / b.step)
		if n <= 360 && n*rowsPerBucket <= maxRows {
			return i
		}
	}
	return len(breakdownBuckets) - 1
}

// chart is a stacked bar chart drawn as SVG on the server.
type chart struct {
	Width, Height float64
	Bars          []bar
	Series        []series
	// YMax is the count per bucket at the top; Ticks label the y axis and
	// Labels the x axis.
	YMax   float64
	Ticks  []tick
	Labels []tick
	Unit   string
	Empty  bool
	Title  string
	// ViewH is the height of the SVG view box, LabelY the baseline of
	// the x axis labels.
	ViewH, LabelY float64
}

type series struct{ Name, Class string }

type bar struct {
	X, W  float64
	Segs  []seg
	Title string
}

type seg struct {
	Y, H  float64
	Class string
}

type tick struct {
	Pos           float64
	Label, Anchor string
}

// divisions splits the y axis of a nice maximum into round steps.
func divisions(top float64) int {
	for top >= 10 {
		top /= 10
	}
	switch {
	case top <= 1 && top > 0.5:
		return 5
	case top >= 2 && top < 5:
		return 4
	}
	return 5
}

const (
	chartW = 960.0
	chartH = 100.0
)

// stackChart draws the counts per bucket of the rows whose key (by keyOf;
// "" skips a row) is one of keys, stacked in that order, one bar per
// bucket of [from, to).
func stackChart(title string, rows []breakdownRow, from, to time.Time, step time.Duration, keys []string, keyOf func(breakdownRow) string) chart {
	c := chart{Width: chartW, Height: chartH, Title: title, ViewH: chartH + 36, LabelY: chartH + 18}
	for _, k := range keys {
		c.Series = append(c.Series, series{Name: k, Class: "s-" + k})
	}
	start := from.Truncate(step)
	n := int(to.Sub(start)/step) + 1
	if to.Sub(start)%step == 0 {
		n--
	}
	n = max(n, 1)
	counts := make([]map[string]int64, n)
	for _, r := range rows {
		k := keyOf(r)
		i := int(r.Bucket.Sub(start) / step)
		if k == "" || i < 0 || i >= n {
			continue
		}
		if counts[i] == nil {
			counts[i] = map[string]int64{}
		}
		counts[i][k] += r.Exchanges
	}
	var top float64
	for _, m := range counts {
		var sum int64
		for _, v := range m {
			sum += v
		}
		top = max(top, float64(sum))
	}
	c.Empty = top == 0
	c.YMax = niceCeil(top)
	c.Unit = "exchanges per " + spanWords(step)
	w := chartW / float64(n)
	for i, m := range counts {
		b := bar{X: float64(i) * w, W: max(w-0.5, 0.5)}
		t := start.Add(time.Duration(i) * step)
		b.Title = t.UTC().Format("2006-01-02 15:04")
		y := chartH
		for _, k := range keys {
			v := m[k]
			if v == 0 {
				continue
			}
			h := float64(v) / c.YMax * chartH
			y -= h
			b.Segs = append(b.Segs, seg{Y: y, H: h, Class: "s-" + k})
			b.Title += fmt.Sprintf(", %s %d", k, v)
		}
		if len(b.Segs) > 0 {
			c.Bars = append(c.Bars, b)
		}
	}
	div := divisions(c.YMax)
	for i := 0; i <= div; i++ {
		v := c.YMax * float64(i) / float64(div)
		c.Ticks = append(c.Ticks, tick{Pos: chartH - v/c.YMax*chartH, Label: trimFloat(v)})
	}
	layout := "15:04"
	if to.Sub(from) > 24*time.Hour {
		layout = "01-02 15:04"
	}
	for i := 0; i <= 4; i++ {
		t := start.Add(time.Duration(float64(n) * float64(i) / 4 * float64(step)))
		anchor := "middle"
		switch i {
		case 0:
			anchor = "start"
		case 4:
			anchor = "end"
		}
		c.Labels = append(c.Labels, tick{Pos: chartW * float64(i) / 4, Label: t.UTC().Format(layout), Anchor: anchor})
	}
	return c
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := 1.0
	for p*10 <= v {
		p *= 10
	}
	for p > v*10 {
		p /= 10
	}
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprint(int64(v))
	}
	return fmt.Sprintf("%.2g", v)
}

func spanWords(d time.Duration) string {
	switch d {
	case time.Minute:
		return "minute"
	case time.Hour:
		return "hour"
	case 24 * time.Hour:
		return "day"
	}
	return fmt.Sprintf("%d minutes", d/time.Minute)
}

package web

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// frame is what the layout shows around every page.
type frame struct {
	Title    string
	Dev      bool
	SignedIn bool
	CSRF     string
	// Range is the time range of the page as the visitor gave it;
	// RangeKeep the other parameters the range form resends.
	Range     timeRange
	RangeKeep map[string]string
	Path      string
	Page      any
}

// timeRange is the from and to of a page: as given (relative or
// absolute) and as the API resolved them.
type timeRange struct {
	From, To     string
	FromAt, ToAt time.Time
	Presets      []preset
	Shown        bool
	Resolved     bool
}

type preset struct {
	Label, Href string
	Current     bool
}

func (v *View) render(w http.ResponseWriter, r *http.Request, status int, page, title string, data any) {
	v.renderRange(w, r, status, page, title, data, timeRange{})
}

func (v *View) renderRange(w http.ResponseWriter, r *http.Request, status int, page, title string, data any, tr timeRange) {
	f := frame{Title: title, Dev: v.cfg.Dev, SignedIn: tokenOf(r) != "", CSRF: v.csrfToken(w, r), Range: tr, Path: r.URL.Path, Page: data}
	if tr.Shown {
		f.RangeKeep = map[string]string{}
		for k, vals := range r.URL.Query() {
			if k != "from" && k != "to" && k != "cursor" && len(vals) == 1 {
				f.RangeKeep[k] = vals[0]
			}
		}
		f.Range.Presets = presets(r, tr.From, tr.To)
	}
	var buf bytes.Buffer
	if err := v.pages[page].ExecuteTemplate(&buf, "layout.html", f); err != nil {
		v.log.Error().Err(err).Str("page", page).Msg("render page")
		http.Error(w, "the page could not be drawn; the server log says why", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

var presetSpans = []string{"-1h", "-6h", "-24h", "-7d", "-30d"}

func presets(r *http.Request, from, to string) []preset {
	out := make([]preset, 0, len(presetSpans))
	for _, p := range presetSpans {
		q := r.URL.Query()
		q.Set("from", p)
		q.Del("to")
		q.Del("cursor")
		out = append(out, preset{Label: "last " + strings.TrimPrefix(p, "-"), Href: r.URL.Path + "?" + q.Encode(), Current: from == p && (to == "" || to == "now")})
	}
	return out
}

// errorPage is what the error page shows.
type errorPage struct {
	Status        int
	Title         string
	Detail        string
	InvalidParams []invalidParam
	RetryAfter    string
}

// fail answers with what went wrong: the token prompt for a 401, the
// API's problem otherwise, under the API's status.
func (v *View) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	if !errors.As(err, &ae) {
		v.log.Error().Err(err).Str("path", r.URL.Path).Msg("view page failed")
		ae = &apiError{Status: http.StatusInternalServerError, Problem: problem{Title: "Internal Server Error", Detail: "the page failed; the server log has the cause"}}
	}
	switch ae.Status {
	case http.StatusUnauthorized:
		msg := "Enter a token to see this page."
		if tokenOf(r) != "" {
			msg = "Your token is no longer accepted; enter one again."
		}
		v.prompt(w, r, msg)
		return
	case http.StatusTooManyRequests:
		if ae.RetryAfter != "" {
			w.Header().Set("Retry-After", ae.RetryAfter)
		}
	}
	if ae.Status >= 500 && ae.Status != http.StatusServiceUnavailable {
		v.log.Warn().Int("status", ae.Status).Str("detail", ae.Problem.Detail).Str("path", r.URL.Path).Msg("api call of view page failed")
	}
	title := ae.Problem.Title
	if title == "" {
		title = http.StatusText(ae.Status)
	}
	v.render(w, r, ae.Status, "error", title, errorPage{Status: ae.Status, Title: title, Detail: ae.Problem.Detail,
		InvalidParams: ae.Problem.InvalidParams, RetryAfter: ae.RetryAfter})
}

// link builds a path of the view with query parameters; empty values are
// left out.
func link(path string, kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

var funcs = template.FuncMap{
	"num": num,
	"pct": func(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) },
	"ms":  func(f float64) string { return fmt.Sprintf("%.1f ms", f) },
	"msp": func(f *float64) string {
		if f == nil {
			return "–"
		}
		return fmt.Sprintf("%.1f", *f)
	},
	"when":   func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000Z") },
	"advice": adviceWords,
	"layer":  layerWords,
	"class":  classWords,
	"link":   link,
	"join":   strings.Join,
	"short":  short,
	"code": func(c *int64) string {
		if c == nil {
			return ""
		}
		return fmt.Sprint(*c)
	},
}

// num writes n with thousands separators.
func num(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// short cuts s to about 160 characters for a table cell; the exchange
// page shows it whole.
func short(s string) string {
	const n = 160
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

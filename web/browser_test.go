package web_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromium finds the browser: MCPLENS_CHROMIUM, else Debian's chromium
// on the PATH. Missing, the browser tests fail under CI=true (where
// .ci/chromium.sh installs it) and skip elsewhere.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("MCPLENS_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed; .ci/chromium.sh installs it (apt-get install chromium)")
	}
	t.Skip("chromium is not installed (apt-get install chromium); the browser tests skip outside CI")
	return ""
}

// browser is one headless Chromium with a fresh profile, and what it
// reported: console errors, uncaught exceptions, failed loads, and the
// status of the last document it loaded.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu        sync.Mutex
	errs      []string
	docStatus int64
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	// A fresh profile; removed after the browser is gone (t.TempDir would
	// race with Chromium's last writes).
	profile, err := os.MkdirTemp("", "mcplens-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
		for i := 0; i < 20 && os.RemoveAll(profile) != nil; i++ {
			time.Sleep(50 * time.Millisecond)
		}
	})
	b := &browser{t: t, ctx: ctx}
	chromedp.ListenTarget(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.APITypeError || ev.Type == runtime.APITypeAssert {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value))
				}
				b.errs = append(b.errs, "console: "+strings.Join(parts, " "))
			}
		case *runtime.EventExceptionThrown:
			b.errs = append(b.errs, "exception: "+ev.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.LevelError {
				b.errs = append(b.errs, fmt.Sprintf("log %s: %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		case *network.EventResponseReceived:
			if ev.Type == network.ResourceTypeDocument {
				b.docStatus = ev.Response.Status
			}
		}
	})
	b.run(log.Enable(), runtime.Enable(), network.Enable())
	return b
}

func (b *browser) run(actions ...chromedp.Action) {
	b.t.Helper()
	if err := chromedp.Run(b.ctx, actions...); err != nil {
		b.t.Fatal(err)
	}
}

// settle reports the errors since the last call, except those that
// contain one of expected, and the status of the document now shown.
// Chromium reports console and log entries asynchronously, so an
// expected entry can arrive after the page is ready: settle waits (up to
// 10 s) until each expected entry has arrived, so that none spills into
// the next call.
func (b *browser) settle(expected ...string) int64 {
	b.t.Helper()
	b.run(chromedp.WaitReady("body"))
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.mu.Lock()
		missing := ""
		for _, a := range expected {
			seen := false
			for _, e := range b.errs {
				seen = seen || strings.Contains(e, a)
			}
			if !seen {
				missing = a
			}
		}
		if missing == "" || time.Now().After(deadline) {
			defer b.mu.Unlock()
			if missing != "" {
				b.t.Errorf("the page never reported the expected %q", missing)
			}
			break
		}
		b.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	for _, e := range b.errs {
		ok := false
		for _, a := range expected {
			ok = ok || strings.Contains(e, a)
		}
		if !ok {
			b.t.Errorf("the page reported an error: %s", e)
		}
	}
	b.errs = nil
	return b.docStatus
}

// text returns the visible text of the first element matching sel.
func (b *browser) text(sel string) string {
	b.t.Helper()
	var s string
	b.run(chromedp.Text(sel, &s, chromedp.ByQuery))
	return s
}

// count returns how many elements match sel.
func (b *browser) count(sel string) int {
	b.t.Helper()
	var n int
	b.run(chromedp.Evaluate(fmt.Sprintf("document.querySelectorAll(%q).length", sel), &n))
	return n
}

// screenshot writes the viewport (or the whole page) to
// testdata/screenshots/name.png when the tests run with -update.
func (b *browser) screenshot(name string, whole bool) {
	b.t.Helper()
	if !*update {
		return
	}
	var png []byte
	if whole {
		b.run(chromedp.FullScreenshot(&png, 100))
	} else {
		b.run(chromedp.CaptureScreenshot(&png))
	}
	path := filepath.Join("testdata", "screenshots", name+".png")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

func (b *browser) dark(on bool) {
	b.t.Helper()
	v := "light"
	if on {
		v = "dark"
	}
	b.run(emulation.SetEmulatedMedia().WithFeatures([]*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}}))
}

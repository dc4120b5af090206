package demo

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestDriveAgainstServer runs the whole script straight against the
// faulty MCP server and checks that each fault shows up as the client
// sees it.
func TestDriveAgainstServer(t *testing.T) {
	url, stop, err := StartMCPServer()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var lines []string
	if err := Drive(ctx, url, func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }); err != nil {
		t.Fatal(err)
	}
	out := strings.Join(lines, "\n")
	for _, want := range []string{"503", "429", "isError", "-> ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("script output lacks %q:\n%s", want, out)
		}
	}
	t.Log(out)
}

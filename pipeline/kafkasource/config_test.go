package kafkasource

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseURL(t *testing.T) {
	defaults := func(c Config) Config { c.setDefaults(); return c }
	tests := []struct {
		name string
		raw  string
		want Config
	}{
		{
			name: "one broker, default group",
			raw:  "kafka://127.0.0.1:9092/mcp-logs",
			want: defaults(Config{Brokers: []string{"127.0.0.1:9092"}, Topic: "mcp-logs"}),
		},
		{
			name: "several brokers, group and start",
			raw:  "kafka://k1:9092,k2:9093/mcp.logs_v1?group=g1&start=last",
			want: defaults(Config{Brokers: []string{"k1:9092", "k2:9093"}, Topic: "mcp.logs_v1", Group: "g1", Start: StartLast}),
		},
		{
			name: "ipv6 broker and tuning",
			raw:  "kafka://[::1]:9092/t?start=first&min_bytes=10&max_bytes=2048&max_wait=2s&queue=50&align_wait=250ms",
			want: defaults(Config{
				Brokers: []string{"[::1]:9092"}, Topic: "t",
				MinBytes: 10, MaxBytes: 2048, MaxWait: 2 * time.Second, QueueCapacity: 50, AlignWait: 250 * time.Millisecond,
			}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseURL(tt.raw)
			if err != nil {
				t.Fatalf("ParseURL(%q): %v", tt.raw, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseURL(%q)\n got %+v\nwant %+v", tt.raw, got, tt.want)
			}
		})
	}
}

func TestParseURLRejects(t *testing.T) {
	tests := []struct {
		name, raw, wantErr string
	}{
		{"empty", "", "want kafka://"},
		{"other scheme", "http://127.0.0.1:9092/t", "want kafka://"},
		{"no scheme", "127.0.0.1:9092/t", "want kafka://"},
		{"no broker", "kafka:///t", "no broker address"},
		{"no port", "kafka://localhost/t", `broker "localhost": want HOST:PORT`},
		{"bad port", "kafka://localhost:99999/t", `port "99999"`},
		{"empty host", "kafka://:9092/t", "empty host"},
		{"empty broker in list", "kafka://a:1,/t", `broker "": want HOST:PORT`},
		{"no topic", "kafka://localhost:9092", "topic \"\": missing"},
		{"no topic, slash", "kafka://localhost:9092/?group=g", "topic \"\": missing"},
		{"topic with slash", "kafka://localhost:9092/a/b", `character '/'`},
		{"topic dot", "kafka://localhost:9092/..", `"." and ".."`},
		{"topic too long", "kafka://localhost:9092/" + strings.Repeat("x", 250), "longer than 249"},
		{"empty group", "kafka://localhost:9092/t?group=", "group is empty"},
		{"group twice", "kafka://localhost:9092/t?group=a&group=b", `"group" given 2 times`},
		{"bad start", "kafka://localhost:9092/t?start=middle", `start "middle"`},
		{"unknown param", "kafka://localhost:9092/t?grup=g", `unknown parameter "grup"`},
		{"bad max_wait", "kafka://localhost:9092/t?max_wait=10", "max_wait"},
		{"zero queue", "kafka://localhost:9092/t?queue=0", "queue"},
		{"zero align_wait", "kafka://localhost:9092/t?align_wait=0s", "align_wait"},
		{"min above max", "kafka://localhost:9092/t?min_bytes=10&max_bytes=5", "min_bytes 10, max_bytes 5"},
		{"credentials", "kafka://u:p@localhost:9092/t", "credentials"},
		{"fragment", "kafka://localhost:9092/t#x", "fragment"},
		{"bad escape", "kafka://localhost:9092/%zz", "topic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseURL(tt.raw)
			if err == nil {
				t.Fatalf("ParseURL(%q) = %+v, want error containing %q", tt.raw, cfg, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseURL(%q) error = %q, want it to contain %q", tt.raw, err, tt.wantErr)
			}
		})
	}
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	f := func(cfg Config, wantErr string) {
		t.Helper()
		_, err := New(cfg, discard, nil)
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("New(%+v) error = %v, want it to contain %q", cfg, err, wantErr)
		}
	}
	f(Config{Topic: "t"}, "no broker address")
	f(Config{Brokers: []string{"h:1"}}, "topic")
	f(Config{Brokers: []string{"h:1"}, Topic: "t", Start: "oldest"}, "start")
	f(Config{Brokers: []string{"h:1"}, Topic: "t", SessionTimeout: time.Second}, "session timeout")
}

func FuzzParseURL(f *testing.F) {
	for _, s := range []string{
		"kafka://127.0.0.1:9092/t",
		"kafka://a:1,b:2/topic?group=g&start=last",
		"kafka://[::1]:9092/t?max_wait=1s&queue=5",
		"kafka://h:1/%41?min_bytes=1&max_bytes=2",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		cfg, err := ParseURL(raw)
		if err != nil {
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("ParseURL(%q) accepted a config that fails Validate: %v", raw, err)
		}
		if len(cfg.Brokers) == 0 || cfg.Topic == "" || cfg.Group == "" {
			t.Fatalf("ParseURL(%q) = %+v: missing brokers, topic or group", raw, cfg)
		}
	})
}

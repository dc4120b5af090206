package secret

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestMaskURL(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		if got := MaskURL(in); got != want {
			t.Errorf("MaskURL(%q) = %q, want %q", in, got, want)
		}
	}
	f("", "")
	f("duckdb:mcplens.duckdb", "duckdb:mcplens.duckdb")
	f("clickhouse://127.0.0.1:9000/mcplens", "clickhouse://127.0.0.1:9000/mcplens")
	f("clickhouse://default:@127.0.0.1:9000/mcplens", "clickhouse://default:xxxxx@127.0.0.1:9000/mcplens")
	f("clickhouse://default@127.0.0.1:9000/mcplens", "clickhouse://default@127.0.0.1:9000/mcplens")
	f("clickhouse://ingest:S3cret@ch:9000/mcplens?secure=true", "clickhouse://ingest:xxxxx@ch:9000/mcplens?secure=true")
	f("clickhouse://ingest:p/a?s#s@w@ch:9000/db", "clickhouse://ingest:xxxxx@ch:9000/db")
	f("clickhouse://ch:9000/db?username=u&password=S3cret&secure=true", "clickhouse://ch:9000/db?username=u&password=xxxxx&secure=true")
	f("kafka://u:pw@b1:9092,b2:9092/topic?group=g&sasl_password=pw2", "kafka://u:xxxxx@b1:9092,b2:9092/topic?group=g&sasl_password=xxxxx")
	f("u:pw@host", "u:xxxxx@host")
	f("clickhouse://ch:9000/db?Pass%77ord=x", "clickhouse://ch:9000/db?Pass%77ord=xxxxx")
	f("h:1/db#frag?password=pw", "h:1/db#frag?password=xxxxx")
}

// TestNeverPrinted checks every way a value reaches text.
func TestNeverPrinted(t *testing.T) {
	const pw = "hunter2-S3cret"
	pass := String(pw)
	u := URL("clickhouse://ingest:" + pw + "@ch:9000/mcplens?password=" + pw)
	for _, v := range []any{pass, &pass, u, &u} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10s", "%T"} {
			if out := fmt.Sprintf(verb, v); strings.Contains(out, pw) {
				t.Errorf("%s of %T prints the secret: %s", verb, v, out)
			}
		}
		if out := fmt.Sprint(v) + fmt.Sprintln(v); strings.Contains(out, pw) {
			t.Errorf("Sprint of %T prints the secret", v)
		}
		b, err := json.Marshal(map[string]any{"v": v})
		if err != nil || bytes.Contains(b, []byte(pw)) {
			t.Errorf("json of %T: %s, %v", v, b, err)
		}
		var buf bytes.Buffer
		log := zerolog.New(&buf)
		log.Info().Interface("i", v).Msgf("%v", v)
		log.Info().Any("a", v).Send()
		if s, ok := v.(fmt.Stringer); ok {
			log.Info().Stringer("s", s).Send()
		}
		if strings.Contains(buf.String(), pw) {
			t.Errorf("zerolog prints the secret of %T: %s", v, buf.String())
		}
	}
	if pass.Reveal() != pw || !strings.Contains(u.Reveal(), pw) {
		t.Error("Reveal must give the value back")
	}
	type cfg struct {
		Password String
		DSN      URL
	}
	if out := fmt.Sprintf("%+v %#v", cfg{pass, u}, cfg{pass, u}); strings.Contains(out, pw) {
		t.Errorf("a struct holding secrets prints them: %s", out)
	}
}

func TestFlagDefaults(t *testing.T) {
	const pw = "from-env-S3cret"
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var buf bytes.Buffer
	fs.SetOutput(&buf)
	pass := String(pw) // a default taken from the environment
	u := URL("clickhouse://u:" + pw + "@h:9000/db")
	fs.Var(&pass, "password", "the password")
	fs.Var(&u, "to", "the store")
	fs.PrintDefaults()
	if strings.Contains(buf.String(), pw) {
		t.Errorf("--help shows the secret:\n%s", buf.String())
	}
	if err := fs.Parse([]string{"-password", "given", "-to", "clickhouse://a:b@c:1/d"}); err != nil || pass.Reveal() != "given" || u.Reveal() != "clickhouse://a:b@c:1/d" {
		t.Fatalf("parse: %v %q %q", err, pass.Reveal(), u.Reveal())
	}
}

// FuzzURLHidesPassword: whatever the URL, a password between ':' and '@' of
// its user information, or a password= parameter, is never printed.
func FuzzURLHidesPassword(f *testing.F) {
	f.Add("clickhouse://", "user", "S3cretpw", "ch:9000/db?secure=true")
	f.Add("kafka://", "u", "p@ss/w?rd#x", "b:9092/t?group=g")
	f.Add("", "u", "pw:pw", "host")
	f.Fuzz(func(t *testing.T, scheme, user, pw, rest string) {
		if sch, ok := strings.CutSuffix(scheme, "://"); scheme != "" && (!ok || !isScheme(sch)) {
			return
		}
		if scheme == "" && strings.HasPrefix(pw, "//") {
			return // "user://pw@host" is a URL whose user is pw: no password to hide
		}
		if len(pw) < 4 || user == "" || strings.ContainsAny(user, ":@/?#") || strings.Contains(scheme+user+":"+Mask+"@"+rest, pw) {
			return
		}
		raw := scheme + user + ":" + pw + "@" + rest
		if got := URL(raw).String(); strings.Contains(got, pw) {
			t.Fatalf("URL(%q) prints %q", raw, got)
		}
		q := scheme + "h:1/db?a=1&password=" + pw
		if strings.ContainsAny(pw, "&") || strings.Contains(scheme+"h:1/db?a=1&password="+Mask, pw) {
			return
		}
		if got := URL(q).String(); strings.Contains(got, pw) {
			t.Fatalf("URL(%q) prints %q", q, got)
		}
	})
}

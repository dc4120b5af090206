package api

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"strings"
	"testing"
	"time"
)

func TestTokens(t *testing.T) {
	h := sha256.Sum256([]byte("hashed-token-0123456789"))
	file := "# comment\n\nplain-token-0123456789 scopes=read name=dash\n" +
		"sha256:" + hex.EncodeToString(h[:]) + " scopes=read,bodies name=oncall\n" +
		"another-token-0123456789 scopes=bodies,read,read\n"
	var tk Tokens
	if err := tk.ReadTokens(strings.NewReader(file), "tokens.txt"); err != nil {
		t.Fatal(err)
	}
	if tk.Len() != 3 {
		t.Fatalf("%d tokens", tk.Len())
	}
	for token, want := range map[string]string{
		"plain-token-0123456789": "dash", "hashed-token-0123456789": "oncall", "another-token-0123456789": "tokens.txt:5",
		"plain-token-012345678": "", "": "", "sha256:" + hex.EncodeToString(h[:]): "",
	} {
		p, ok := tk.Lookup(token)
		if ok != (want != "") || p.Name != want {
			t.Errorf("Lookup(%q) = %+v, %v; want %q", token, p, ok, want)
		}
	}
	if p, _ := tk.Lookup("hashed-token-0123456789"); !p.Has(ScopeRead) || !p.Has(ScopeBodies) {
		t.Errorf("oncall scopes %v", p.Scopes)
	}
	if p, _ := tk.Lookup("plain-token-0123456789"); p.Has(ScopeBodies) {
		t.Errorf("dash scopes %v", p.Scopes)
	}
	if p, _ := tk.Lookup("another-token-0123456789"); len(p.Scopes) != 2 {
		t.Errorf("duplicate scopes kept: %v", p.Scopes)
	}

	env := Tokens{}
	if err := env.ParseTokenList(" env-token-0123456789 scopes=read name=a ;; env-token2-0123456789 scopes=read name=b;", "MCPLENS_TOKENS"); err != nil || env.Len() != 2 {
		t.Errorf("env list: %v, %d tokens", err, env.Len())
	}

	for _, bad := range []string{
		"short scopes=read", "long-enough-token-123 name=x", "long-enough-token-123 scopes=admin",
		"long-enough-token-123 scopes=read colour=blue", "sha256:abc scopes=read", "sha256:" + strings.Repeat("zz", 32) + " scopes=read",
		"scopes=read name=x", "long-enough-token-123 scopes=read name=",
		"long-enough-token-123 scopes=read name=a\nlong-enough-token-123 scopes=read name=b",
		"long-enough-token-123 scopes=read name=a\nother-long-token-1234 scopes=read name=a",
	} {
		var tk Tokens
		err := tk.ReadTokens(strings.NewReader(bad), "f")
		if err == nil {
			t.Errorf("%q accepted", bad)
			continue
		}
		if strings.Contains(err.Error(), "long-enough-token-123") || strings.Contains(err.Error(), "other-long-token") {
			t.Errorf("error names the token: %v", err)
		}
	}
}

// TestTokenErrorsEcho: a misspelt attribute or scope is named so the
// operator can fix it; anything long enough to be a token, or that would
// print escaped, is described by its length instead.
func TestTokenErrorsEcho(t *testing.T) {
	for line, want := range map[string]string{
		"long-enough-token-123 scopes=read scope=read":                      `unknown attribute "scope"`,
		"long-enough-token-123 scopes=reed":                                 `unknown scope "reed"`,
		"long-enough-token-123 scopes=read second-pasted-token-456":         "unknown attribute (23 bytes, not shown)",
		"long-enough-token-123 scopes=read,second-pasted-token-456":         "unknown scope (23 bytes, not shown)",
		"long-enough-token-123 scopes=read \x00abc":                         "unknown attribute (4 bytes, not shown)",
		"long-enough-token-123 scopes=read name=a\"b":                       "not plain printable text",
		"long-enough-token-123 scopes=read name=" + strings.Repeat("n", 65): "longer than 64",
	} {
		var tk Tokens
		err := tk.ReadTokens(strings.NewReader(line), "f")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", line, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "pasted-token") {
			t.Errorf("%q: error shows the token: %v", line, err)
		}
	}
}

func TestConfig(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	c.RegisterFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	d := DefaultConfig()
	if c.MaxSpan != d.MaxSpan || c.DefaultWindow != d.DefaultWindow || c.MaxLimit != 1000 || c.QueryTimeout != 10*time.Second || c.Dev || len(c.CORSOrigins) != 0 {
		t.Errorf("defaults %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
	if err := fs.Parse([]string{"--max-span", "7d", "--default-window", "2h", "--cors-origin", "https://a.example,https://b.example:8443", "--cors-origin", "*"}); err != nil {
		t.Fatal(err)
	}
	if c.MaxSpan != 7*24*time.Hour || c.DefaultWindow != 2*time.Hour || len(c.CORSOrigins) != 3 {
		t.Errorf("parsed %+v", c)
	}
	for _, bad := range []func(*Config){
		func(c *Config) { c.MaxSpan = 0 },
		func(c *Config) { c.DefaultWindow = c.MaxSpan + 1 },
		func(c *Config) { c.MaxLimit = 0 },
		func(c *Config) { c.MaxLimit = 10_001 },
		func(c *Config) { c.QueryTimeout = 0 },
		func(c *Config) { c.RateLimit = -1 },
		func(c *Config) { c.RateBurst = 0 },
		func(c *Config) { c.CORSOrigins = []string{"ui.example"} },
		func(c *Config) { c.CORSOrigins = []string{"https://ui.example/path"} },
	} {
		c := DefaultConfig()
		bad(&c)
		if c.Validate() == nil {
			t.Errorf("%+v validated", c)
		}
	}
}

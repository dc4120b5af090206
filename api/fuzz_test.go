package api

import (
	"strings"
	"testing"
)

// FuzzTokens: the tokens file is operator input, but its errors must never
// echo a token.
func FuzzTokens(f *testing.F) {
	f.Add("plain-token-0123456789 scopes=read name=dash\n# c\nsha256:" + strings.Repeat("ab", 32) + " scopes=bodies")
	f.Add("x scopes=read")
	f.Fuzz(func(t *testing.T, s string) {
		var tk Tokens
		err := tk.ReadTokens(strings.NewReader(s), "f")
		if err == nil {
			return
		}
		for _, line := range strings.Split(s, "\n") {
			fields := strings.Fields(line)
			if len(fields) > 0 && len(fields[0]) >= MinTokenLength && !strings.HasPrefix(fields[0], "#") &&
				strings.Count(s, fields[0]) == 1 && strings.Contains(err.Error(), fields[0]) {
				t.Errorf("error %q echoes the token %q", err, fields[0])
			}
		}
	})
}

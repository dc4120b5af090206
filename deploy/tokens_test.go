package deploy

import (
	"os"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/mcplens/mcplens/api"
)

// TestTokenFilesParse holds the token files the stacks mount to the API's
// own parser, so a format change cannot leave them unusable.
func TestTokenFilesParse(t *testing.T) {
	f, err := os.Open("compose/api-tokens.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var compose api.Tokens
	if err := compose.ReadTokens(f, "compose/api-tokens.txt"); err != nil {
		t.Errorf("compose tokens: %v", err)
	}
	raw, err := os.ReadFile("k8s/secret.yaml")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, doc := range strings.Split(string(raw), "\n---") {
		var sec struct {
			Metadata   struct{ Name string } `yaml:"metadata"`
			StringData map[string]string     `yaml:"stringData"`
		}
		if err := yaml.Unmarshal([]byte(doc), &sec); err != nil {
			t.Fatal(err)
		}
		if sec.Metadata.Name != "mcplens-api-tokens" {
			continue
		}
		found = true
		var k8s api.Tokens
		if err := k8s.ReadTokens(strings.NewReader(sec.StringData["tokens"]), "k8s/secret.yaml"); err != nil {
			t.Errorf("kubernetes tokens: %v", err)
		}
	}
	if !found {
		t.Error("k8s/secret.yaml has no mcplens-api-tokens secret")
	}
}

package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// knownImages are the third-party images the deploy files may use, each
// with the form its tag must have: a release number, never a floating tag.
var knownImages = map[string]*regexp.Regexp{
	"apache/kafka":                      regexp.MustCompile(`^\d+\.\d+\.\d+$`),
	"clickhouse/clickhouse-server":      regexp.MustCompile(`^\d+\.\d+(\.\d+){0,2}$`),
	"grafana/grafana":                   regexp.MustCompile(`^\d+\.\d+\.\d+$`),
	"golang":                            regexp.MustCompile(`^\d+\.\d+(\.\d+)?-(bookworm|trixie)$`),
	"gcr.io/distroless/cc-debian12":     regexp.MustCompile(`^nonroot$`),
	"gcr.io/distroless/cc-debian13":     regexp.MustCompile(`^nonroot$`),
	"gcr.io/distroless/static-debian12": regexp.MustCompile(`^nonroot$`),
	"gcr.io/distroless/static-debian13": regexp.MustCompile(`^nonroot$`),
}

// ownImage matches the images built from deploy/docker: mcplens/CMD, maybe
// under a registry.
var ownImage = regexp.MustCompile(`^(?:[\w.-]+(?::\d+)?/)*mcplens/([a-z0-9-]+)$`)

// splitImage splits "repo:tag"; a digest (@sha256:...) counts as pinned.
func splitImage(ref string) (repo, tag string) {
	if repo, digest, ok := strings.Cut(ref, "@"); ok {
		return repo, "@" + digest
	}
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return ref, ""
	}
	return ref[:i], ref[i+1:]
}

// checkImage requires a pinned image of a known form and returns the cmd/
// name for one of mcplens' own images ("" for a third-party image).
func checkImage(ref string) (cmd string, err error) {
	repo, tag := splitImage(ref)
	switch {
	case tag == "":
		return "", fmt.Errorf("image %q has no tag: pin a version", ref)
	case tag == "latest":
		return "", fmt.Errorf("image %q: latest is not a version", ref)
	case strings.HasPrefix(tag, "@"):
		return "", nil
	}
	if m := ownImage.FindStringSubmatch(repo); m != nil {
		if _, err := os.Stat(filepath.Join(repoRoot, "cmd", m[1])); err != nil {
			return "", fmt.Errorf("image %q: there is no cmd/%s to build it from", ref, m[1])
		}
		if _, err := os.Stat(filepath.Join("docker", m[1]+".Dockerfile")); err != nil {
			return "", fmt.Errorf("image %q: no deploy/docker/%s.Dockerfile builds it", ref, m[1])
		}
		return m[1], nil
	}
	form, ok := knownImages[repo]
	if !ok {
		return "", fmt.Errorf("image %q is not one the deploy files are known to use (add it to knownImages with its tag form)", ref)
	}
	if !form.MatchString(tag) {
		return "", fmt.Errorf("image %q: tag %q does not have the form %s", ref, tag, form)
	}
	return "", nil
}

func TestCheckImage(t *testing.T) {
	for ref, ok := range map[string]bool{
		"apache/kafka:4.4.0": true, "apache/kafka:latest": false, "apache/kafka": false,
		"apache/kafka:4": false, "grafana/grafana:12.4.0": true, "nginx:1.27": false,
		"mcplens/ingest:0.1.0": true, "registry.example.com:5000/team/mcplens/api:1": true,
		"mcplens/nope:1": false, "clickhouse/clickhouse-server:26.8": true,
		"apache/kafka@sha256:0123": true,
	} {
		if _, err := checkImage(ref); (err == nil) != ok {
			t.Errorf("checkImage(%q) = %v", ref, err)
		}
	}
}

// kafkaVersion is the Kafka version deploy/kafka/kafka.sh runs for tests:
// the Compose and Kubernetes files use the same image version.
func kafkaVersion(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("kafka", "kafka.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`VERSION=\$\{MCPLENS_KAFKA_VERSION:-([0-9.]+)\}`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("deploy/kafka/kafka.sh: no default MCPLENS_KAFKA_VERSION")
	}
	return string(m[1])
}

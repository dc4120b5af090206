package prometheus

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
)

var update = flag.Bool("update", false, "rewrite dashboards/provisioning/alerting.yaml from alerts.yml")

// grafanaFile is Grafana's alert provisioning, generated from alerts.yml.
var grafanaFile = filepath.Join("..", "..", "dashboards", "provisioning", "alerting.yaml")

// promDatasource is the uid of the Prometheus data source that
// dashboards/provisioning/datasources.yaml provisions.
const promDatasource = "mcplens-prometheus"

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	} `yaml:"groups"`
}

type rule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func readRules(t *testing.T) ruleFile {
	t.Helper()
	raw, err := os.ReadFile("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f ruleFile
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatalf("parse alerts.yml: %v", err)
	}
	if len(f.Groups) == 0 {
		t.Fatal("alerts.yml has no groups")
	}
	return f
}

// TestPromtool checks and unit-tests the rules with promtool (Debian's
// prometheus package; .ci/promtool.sh installs it). Without promtool it
// skips, and fails under CI=true.
func TestPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool not found under CI=true: .ci/promtool.sh installs it (apt-get install prometheus)")
		}
		t.Skip("promtool not found: apt-get install prometheus")
	}
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		out, err := exec.Command(promtool, args...).CombinedOutput() //nolint:gosec // G204: promtool with fixed arguments
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

var metricName = regexp.MustCompile(`\bmcplens_[a-z_]+\b`)

// TestRulesUseExportedMetrics: every metric a rule names is registered by
// the ingester (its Name: in the Go code), and every rule has the labels
// and annotations on-call needs.
func TestRulesUseExportedMetrics(t *testing.T) {
	exported := map[string]bool{}
	for _, dir := range []string{"../../pipeline", "../../pipeline/kafkasource"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range regexp.MustCompile(`Name:\s+"(mcplens_[a-z_]+)"`).FindAllSubmatch(src, -1) {
				exported[string(m[1])] = true
			}
		}
	}
	if len(exported) < 10 {
		t.Fatalf("found only %d exported metrics: %v", len(exported), exported)
	}
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			for _, name := range metricName.FindAllString(r.Expr, -1) {
				if !exported[name] {
					t.Errorf("%s uses %s, which the ingester does not export", r.Alert, name)
				}
			}
			if r.Labels["severity"] != "page" && r.Labels["severity"] != "ticket" {
				t.Errorf("%s: severity %q, want page or ticket", r.Alert, r.Labels["severity"])
			}
			for _, a := range []string{"summary", "description", "runbook"} {
				if r.Annotations[a] == "" {
					t.Errorf("%s: no %s annotation", r.Alert, a)
				}
			}
		}
	}
}

// TestGrafanaAlertsFollowRules: Grafana's provisioned alert rules are the
// translation of alerts.yml, one for one.
func TestGrafanaAlertsFollowRules(t *testing.T) {
	got := grafanaAlerting(t, readRules(t))
	if *update {
		if err := os.WriteFile(grafanaFile, got, 0o644); err != nil { //nolint:gosec // G306: a provisioning file of the repository
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(grafanaFile)
	if err != nil {
		t.Fatalf("read %s: %v (run `go test ./deploy/prometheus -update`)", grafanaFile, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the translation of alerts.yml; run `go test ./deploy/prometheus -update` and review the diff", grafanaFile)
	}
}

// grafanaAlerting translates Prometheus rules into Grafana's alert
// provisioning: query A is the rule's expression, evaluated instantly on
// the Prometheus data source (it returns only the series that breach, each
// with a positive value), and condition C fires for every such series.
// Annotations keep their templates, with $value spelled as Grafana does.
func grafanaAlerting(t *testing.T, f ruleFile) []byte {
	t.Helper()
	type query struct {
		RefID             string         `yaml:"refId"`
		RelativeTimeRange map[string]int `yaml:"relativeTimeRange,omitempty"`
		DatasourceUID     string         `yaml:"datasourceUid"`
		Model             map[string]any `yaml:"model"`
	}
	type grafanaRule struct {
		UID          string            `yaml:"uid"`
		Title        string            `yaml:"title"`
		Condition    string            `yaml:"condition"`
		Data         []query           `yaml:"data"`
		NoDataState  string            `yaml:"noDataState"`
		ExecErrState string            `yaml:"execErrState"`
		For          string            `yaml:"for"`
		Labels       map[string]string `yaml:"labels"`
		Annotations  map[string]string `yaml:"annotations"`
	}
	type group struct {
		OrgID    int           `yaml:"orgId"`
		Name     string        `yaml:"name"`
		Folder   string        `yaml:"folder"`
		Interval string        `yaml:"interval"`
		Rules    []grafanaRule `yaml:"rules"`
	}
	var groups []group
	uids := map[string]bool{}
	for _, g := range f.Groups {
		out := group{OrgID: 1, Name: g.Name, Folder: "mcplens", Interval: "1m"}
		for _, r := range g.Rules {
			uid := "mcplens-" + strings.ToLower(strings.TrimPrefix(r.Alert, "MCPLens"))
			if len(uid) > 40 || uids[uid] {
				t.Fatalf("%s: Grafana uid %q is too long or repeats", r.Alert, uid)
			}
			uids[uid] = true
			window := 600
			if d, ok := longestRange(r.Expr); ok {
				window = int(d.Seconds())
			}
			out.Rules = append(out.Rules, grafanaRule{
				UID: uid, Title: r.Alert, Condition: "C",
				Data: []query{
					{RefID: "A", RelativeTimeRange: map[string]int{"from": window, "to": 0}, DatasourceUID: promDatasource, Model: map[string]any{
						"refId": "A", "expr": strings.TrimSpace(r.Expr), "instant": true, "range": false, "intervalMs": 60000, "maxDataPoints": 43200,
					}},
					{RefID: "C", DatasourceUID: "__expr__", Model: map[string]any{
						"refId": "C", "type": "threshold", "expression": "A",
						"conditions": []any{map[string]any{"evaluator": map[string]any{"type": "gt", "params": []int{0}}}},
					}},
				},
				// No series means nothing breaches: not an alert.
				NoDataState: "OK", ExecErrState: "Error",
				For: cmpOr(r.For, "0m"), Labels: r.Labels, Annotations: grafanaTemplates(r.Annotations),
			})
		}
		groups = append(groups, out)
	}
	body, err := yaml.MarshalWithOptions(map[string]any{"apiVersion": 1, "groups": groups}, yaml.IndentSequence(true), yaml.UseLiteralStyleIfMultiline(true))
	if err != nil {
		t.Fatal(err)
	}
	header := "# Grafana alert provisioning for mcplens, GENERATED from deploy/prometheus/alerts.yml\n" +
		"# by `go test ./deploy/prometheus -update`: edit the rules there, not here.\n" +
		"# Copy to /etc/grafana/provisioning/alerting/; the queries use the Prometheus data\n" +
		"# source of datasources.yaml (uid " + promDatasource + ").\n"
	return append([]byte(header), body...)
}

var promValue = regexp.MustCompile(`\$value\b`)

// grafanaTemplates rewrites Prometheus' $value, the breaching value, as
// Grafana's $values.A.Value (Grafana's $value is a text of every query's
// values); $labels and the humanize functions are the same in both.
func grafanaTemplates(annotations map[string]string) map[string]string {
	out := make(map[string]string, len(annotations))
	for k, v := range annotations {
		out[k] = promValue.ReplaceAllString(v, "$$values.A.Value")
	}
	return out
}

var rangeSel = regexp.MustCompile(`\[(\d+[smhd])\]`)

// longestRange is the longest range selector of an expression.
func longestRange(expr string) (time.Duration, bool) {
	var ds []time.Duration
	for _, m := range rangeSel.FindAllStringSubmatch(expr, -1) {
		s := m[1]
		if strings.HasSuffix(s, "d") {
			var n int
			_, _ = fmt.Sscanf(s, "%dd", &n)
			ds = append(ds, time.Duration(n)*24*time.Hour)
			continue
		}
		if d, err := time.ParseDuration(s); err == nil {
			ds = append(ds, d)
		}
	}
	if len(ds) == 0 {
		return 0, false
	}
	return slices.Max(ds), true
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

package deploy

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
)

// composeFile is the subset of the Compose specification the trial stack
// uses. It is decoded strictly: a key not listed here (a typo such as
// "enviroment", or a new feature) fails the test until it is added.
type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
	Secrets  map[string]struct {
		File string `yaml:"file"`
	} `yaml:"secrets"`
	Volumes map[string]any `yaml:"volumes"`
}

type composeService struct {
	Image    string `yaml:"image"`
	Hostname string `yaml:"hostname"`
	Restart  string `yaml:"restart"`
	Ulimits  any    `yaml:"ulimits"`
	Build    *struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	Command     []string       `yaml:"command"`
	Entrypoint  []string       `yaml:"entrypoint"`
	Environment map[string]any `yaml:"environment"`
	Ports       []string       `yaml:"ports"`
	Volumes     []string       `yaml:"volumes"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Secrets         []string `yaml:"secrets"`
	StopGracePeriod string   `yaml:"stop_grace_period"`
	Deploy          struct {
		Replicas *int `yaml:"replicas"`
	} `yaml:"deploy"`
	Healthcheck *struct {
		Test        []string `yaml:"test"`
		Interval    string   `yaml:"interval"`
		Timeout     string   `yaml:"timeout"`
		Retries     int      `yaml:"retries"`
		StartPeriod string   `yaml:"start_period"`
	} `yaml:"healthcheck"`
}

const composeDir = "compose"

func readCompose(t *testing.T) composeFile {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(composeDir, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.UnmarshalWithOptions(raw, &c, yaml.Strict()); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	if len(c.Services) == 0 {
		t.Fatal("docker-compose.yml has no services")
	}
	return c
}

func (s composeService) env() map[string]string {
	out := make(map[string]string, len(s.Environment))
	for k, v := range s.Environment {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// mount is one short-syntax volume: source (a path relative to the compose
// directory, or a named volume), target, read-only.
type mount struct {
	Source, Target string
	ReadOnly, Bind bool
}

func (s composeService) mounts() []mount {
	var out []mount
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		m := mount{Source: parts[0], Target: parts[1]}
		m.ReadOnly = len(parts) > 2 && strings.Contains(parts[2], "ro")
		m.Bind = strings.HasPrefix(m.Source, ".") || strings.HasPrefix(m.Source, "/")
		out = append(out, m)
	}
	return out
}

// containerPorts returns the container side of every published port.
func (s composeService) containerPorts() []string {
	var out []string
	for _, p := range s.Ports {
		parts := strings.Split(p, ":")
		out = append(out, strings.TrimSuffix(parts[len(parts)-1], "/tcp"))
	}
	return out
}

// TestComposeImages: every service has a pinned image of a known form; the
// ones built here use the Dockerfile of the binary their image is named
// after, with the repository root as context; Kafka runs the version the
// tests run.
func TestComposeImages(t *testing.T) {
	c := readCompose(t)
	kafka := "apache/kafka:" + kafkaVersion(t)
	for name, s := range c.Services {
		cmd, err := checkImage(s.Image)
		if err != nil {
			t.Errorf("service %s: %v", name, err)
			continue
		}
		if strings.HasPrefix(s.Image, "apache/kafka:") && s.Image != kafka {
			t.Errorf("service %s: image %s, want %s (the version deploy/kafka/kafka.sh tests with)", name, s.Image, kafka)
		}
		if cmd == "" {
			if s.Build != nil {
				t.Errorf("service %s builds an image but names a third-party one (%s)", name, s.Image)
			}
			continue
		}
		if s.Build == nil {
			t.Errorf("service %s: image %s is built from this repository; add build:", name, s.Image)
			continue
		}
		ctx := filepath.Join(composeDir, s.Build.Context)
		if _, err := os.Stat(filepath.Join(ctx, "go.mod")); err != nil {
			t.Errorf("service %s: build context %s is not the repository root", name, s.Build.Context)
		}
		if want := "deploy/docker/" + cmd + ".Dockerfile"; s.Build.Dockerfile != want {
			t.Errorf("service %s: dockerfile %s, want %s", name, s.Build.Dockerfile, want)
		}
	}
}

// TestComposeBinaries: every --flag and MCPLENS_* variable given to ingest
// or api exists in that binary, --listen is reachable and published, and
// the ingester gets more time to stop than its final flush may take.
func TestComposeBinaries(t *testing.T) {
	c := readCompose(t)
	for name, s := range c.Services {
		cmd, _ := checkImage(s.Image)
		if cmd == "" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			b := bin(t, cmd)
			if b == nil {
				unchecked(t, cmd, "compose service "+name)
				return
			}
			args := append(slices.Clone(s.Entrypoint), s.Command...)
			set, errs := b.check("service "+name, args, s.env())
			for _, err := range errs {
				t.Error(err)
			}
			port, err := listenPort(b.value(set, "listen"))
			if err != nil {
				t.Fatalf("service %s: %v", name, err)
			}
			if !slices.Contains(s.containerPorts(), port) {
				t.Errorf("service %s listens on %s but publishes %v", name, port, s.Ports)
			}
			if _, ok := b.Flags["shutdown-timeout"]; ok {
				grace, err := time.ParseDuration(s.StopGracePeriod)
				stop, _ := time.ParseDuration(b.value(set, "shutdown-timeout"))
				if err != nil || grace < stop+10*time.Second {
					t.Errorf("service %s: stop_grace_period %q, want at least --shutdown-timeout (%s) + 10s, or SIGKILL cuts the final flush", name, s.StopGracePeriod, stop)
				}
			}
		})
	}
}

// TestComposeWiring: dependencies exist, bind mounts exist in the
// repository, and Kafka, ClickHouse and Grafana agree on addresses, topic,
// partitions and credentials.
func TestComposeWiring(t *testing.T) {
	c := readCompose(t)
	for name, s := range c.Services {
		for dep, d := range s.DependsOn {
			other, ok := c.Services[dep]
			switch {
			case !ok:
				t.Errorf("service %s depends on unknown service %s", name, dep)
			case d.Condition == "service_healthy" && other.Healthcheck == nil:
				t.Errorf("service %s waits for %s to be healthy, but %s has no healthcheck", name, dep, dep)
			case !slices.Contains([]string{"service_started", "service_healthy", "service_completed_successfully"}, d.Condition):
				t.Errorf("service %s: depends_on %s condition %q", name, dep, d.Condition)
			}
		}
		for _, m := range s.mounts() {
			if !m.Bind {
				if _, ok := c.Volumes[m.Source]; !ok {
					t.Errorf("service %s mounts undeclared volume %s", name, m.Source)
				}
				continue
			}
			if _, err := os.Stat(filepath.Join(composeDir, m.Source)); err != nil {
				t.Errorf("service %s mounts %s: %v", name, m.Source, err)
			}
			if !m.ReadOnly {
				t.Errorf("service %s mounts repository file %s read-write", name, m.Source)
			}
		}
		for _, sec := range s.Secrets {
			if _, ok := c.Secrets[sec]; !ok {
				t.Errorf("service %s uses undeclared secret %s", name, sec)
			}
		}
	}
	for name, sec := range c.Secrets {
		if st, err := os.Stat(filepath.Join(composeDir, sec.File)); err != nil {
			t.Errorf("secret %s: %v", name, err)
		} else if st.Mode().Perm()&0o004 == 0 {
			t.Errorf("secret %s: %s must be world-readable: compose bind-mounts it for the non-root API user", name, sec.File)
		}
	}

	kafka, init, ingest, producer := c.Services["kafka"], c.Services["kafka-init"], c.Services["ingest"], c.Services["producer"]
	listeners := kafka.env()["KAFKA_ADVERTISED_LISTENERS"]
	topic, partitions := topicArgs(t, "kafka-init", init.Command)
	if !strings.Contains(listeners, "://"+argAfter(init.Command, "--bootstrap-server")) {
		t.Errorf("kafka-init --bootstrap-server is not an advertised listener (%s)", listeners)
	}
	from := flagValue(ingest, "from")
	u, err := url.Parse(from)
	if err != nil || u.Scheme != "kafka" {
		t.Fatalf("ingest --from %q: want kafka://", from)
	}
	if !strings.Contains(listeners, "://"+u.Host) {
		t.Errorf("ingest reads from %s, which Kafka does not advertise (%s)", u.Host, listeners)
	}
	if strings.TrimPrefix(u.Path, "/") != topic {
		t.Errorf("ingest reads topic %s, kafka-init creates %s", u.Path, topic)
	}
	replicas := 1
	if ingest.Deploy.Replicas != nil {
		replicas = *ingest.Deploy.Replicas
	}
	if replicas > partitions {
		t.Errorf("%d ingest replicas for %d partitions: the extra ones idle", replicas, partitions)
	}
	penv := producer.env()
	if penv["KAFKA_TOPIC"] != topic || !strings.Contains(listeners, "://"+penv["KAFKA_BOOTSTRAP"]) {
		t.Errorf("producer writes to %s at %s; want %s at an advertised listener", penv["KAFKA_TOPIC"], penv["KAFKA_BOOTSTRAP"], topic)
	}
	var corpus bool
	for _, m := range producer.mounts() {
		corpus = corpus || (m.Target == penv["CORPUS"] && strings.HasSuffix(m.Source, ".ndjson"))
	}
	if !corpus {
		t.Errorf("producer CORPUS %s is not a mounted .ndjson file", penv["CORPUS"])
	}
	if len(producer.Entrypoint) != 2 || !slices.ContainsFunc(producer.mounts(), func(m mount) bool {
		return m.Target == producer.Entrypoint[1] && strings.HasSuffix(m.Source, "produce-sample.sh")
	}) {
		t.Errorf("producer entrypoint %v does not run the mounted produce-sample.sh", producer.Entrypoint)
	}

	ch := c.Services["clickhouse"].env()
	for _, svc := range []struct{ name, flag string }{{"ingest", "to"}, {"api", "store"}} {
		dsn := flagValue(c.Services[svc.name], svc.flag)
		u, err := url.Parse(dsn)
		if err != nil || u.Scheme != "clickhouse" {
			t.Errorf("%s --%s %q: want clickhouse://", svc.name, svc.flag, dsn)
			continue
		}
		pw, _ := u.User.Password()
		if _, ok := c.Services[u.Hostname()]; !ok || u.Port() != "9000" || u.User.Username() != ch["CLICKHOUSE_USER"] ||
			pw != ch["CLICKHOUSE_PASSWORD"] || strings.TrimPrefix(u.Path, "/") != ch["CLICKHOUSE_DB"] {
			t.Errorf("%s --%s %q does not match the clickhouse service (native port 9000, its user, password and database)", svc.name, svc.flag, dsn)
		}
	}
	checkGrafana(t, c)
}

// flagValue is a flag of a compose service: its command, else MCPLENS_*.
func flagValue(s composeService, name string) string {
	if v := argAfter(s.Command, "--"+name); v != "" {
		return v
	}
	return s.env()["MCPLENS_"+strings.ToUpper(strings.ReplaceAll(name, "-", "_"))]
}

func argAfter(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

// topicArgs reads topic and partitions of a kafka-topics.sh --create.
func topicArgs(t *testing.T, where string, args []string) (string, int) {
	t.Helper()
	if !slices.Contains(args, "--create") {
		t.Fatalf("%s does not create a topic: %v", where, args)
	}
	n, err := strconv.Atoi(argAfter(args, "--partitions"))
	topic := argAfter(args, "--topic")
	if err != nil || n < 1 || topic == "" {
		t.Fatalf("%s: want --topic and --partitions: %v", where, args)
	}
	return topic, n
}

// checkGrafana: the plugin is installed before provisioning, the data
// source points at the clickhouse service, and the dashboards/ folder is
// mounted read-only where the dashboard provider reads.
func checkGrafana(t *testing.T, c composeFile) {
	t.Helper()
	g := c.Services["grafana"]
	genv := g.env()
	var provisioning, dashboards string
	for _, m := range g.mounts() {
		switch filepath.Clean(filepath.Join(composeDir, m.Source)) {
		case filepath.Join(composeDir, "grafana", "provisioning"):
			provisioning = m.Target
		case filepath.Join(repoRoot, "dashboards"):
			dashboards = m.Target
			if !m.ReadOnly {
				t.Errorf("dashboards/ is mounted read-write")
			}
		}
	}
	if provisioning != "/etc/grafana/provisioning" || dashboards == "" {
		t.Fatalf("grafana mounts provisioning at %q (want /etc/grafana/provisioning) and dashboards/ at %q", provisioning, dashboards)
	}
	var ds struct {
		Datasources []struct {
			UID      string         `yaml:"uid"`
			Type     string         `yaml:"type"`
			JSONData map[string]any `yaml:"jsonData"`
			Secure   map[string]any `yaml:"secureJsonData"`
		} `yaml:"datasources"`
	}
	readYAML(t, filepath.Join(composeDir, "grafana", "provisioning", "datasources", "clickhouse.yaml"), &ds)
	if len(ds.Datasources) != 1 {
		t.Fatalf("want one provisioned data source, got %d", len(ds.Datasources))
	}
	d := ds.Datasources[0]
	if !strings.Contains(genv["GF_PLUGINS_PREINSTALL_SYNC"], d.Type) || d.Type != "grafana-clickhouse-datasource" {
		t.Errorf("data source type %s must be installed by GF_PLUGINS_PREINSTALL_SYNC (%q)", d.Type, genv["GF_PLUGINS_PREINSTALL_SYNC"])
	}
	if d.UID == "" || strings.ContainsAny(d.UID, " ${}") {
		t.Errorf("data source uid %q: want a fixed, plain uid dashboards can name", d.UID)
	}
	ch := c.Services["clickhouse"].env()
	jd := d.JSONData
	if _, ok := c.Services[fmt.Sprint(jd["host"])]; !ok || fmt.Sprint(jd["port"]) != "9000" || jd["protocol"] != "native" ||
		jd["username"] != ch["CLICKHOUSE_USER"] || jd["defaultDatabase"] != ch["CLICKHOUSE_DB"] {
		t.Errorf("data source %v does not match the clickhouse service", jd)
	}
	pw := fmt.Sprint(d.Secure["password"])
	if v, ok := genv[strings.Trim(strings.TrimPrefix(pw, "$"), "{}")]; !ok || v != ch["CLICKHOUSE_PASSWORD"] {
		t.Errorf("data source password %s is not the clickhouse password in grafana's environment", pw)
	}
	var prov struct {
		Providers []struct {
			Type    string `yaml:"type"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, filepath.Join(composeDir, "grafana", "provisioning", "dashboards", "mcplens.yaml"), &prov)
	if len(prov.Providers) != 1 || prov.Providers[0].Type != "file" || prov.Providers[0].Options.Path != dashboards {
		t.Errorf("dashboard provider %+v: want one file provider reading %s", prov.Providers, dashboards)
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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

const k8sDir = "k8s"

// object is one Kubernetes object, with the fields the tests read; the
// kind-specific parts are decoded again from Raw.
type object struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
	File       string            `yaml:"-"`
	Raw        []byte            `yaml:"-"`
}

type container struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef    *keyRef `yaml:"secretKeyRef"`
			ConfigMapKeyRef *keyRef `yaml:"configMapKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	EnvFrom []struct {
		ConfigMapRef *struct {
			Name string `yaml:"name"`
		} `yaml:"configMapRef"`
		SecretRef *struct {
			Name string `yaml:"name"`
		} `yaml:"secretRef"`
	} `yaml:"envFrom"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	Resources      struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext struct {
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
}

type keyRef struct {
	Name string `yaml:"name"`
	Key  string `yaml:"key"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"`
	} `yaml:"httpGet"`
}

type podSpec struct {
	TerminationGracePeriodSeconds *int `yaml:"terminationGracePeriodSeconds"`
	SecurityContext               struct {
		RunAsNonRoot *bool `yaml:"runAsNonRoot"`
	} `yaml:"securityContext"`
	Containers []container `yaml:"containers"`
	Volumes    []struct {
		Name   string `yaml:"name"`
		Secret *struct {
			SecretName string `yaml:"secretName"`
			Items      []struct {
				Key string `yaml:"key"`
			} `yaml:"items"`
		} `yaml:"secret"`
	} `yaml:"volumes"`
}

// workload is a Deployment or a Job.
type workload struct {
	Spec struct {
		Replicas *int `yaml:"replicas"`
		Strategy struct {
			RollingUpdate struct {
				MaxSurge any `yaml:"maxSurge"`
			} `yaml:"rollingUpdate"`
		} `yaml:"strategy"`
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// manifests reads every object of deploy/k8s/*.yaml except the
// kustomization.
func manifests(t *testing.T) []object {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(k8sDir, "*.yaml"))
	var out []object
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(raw))
		for {
			var doc any
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if doc == nil {
				continue
			}
			docRaw, err := yaml.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			var o object
			if err := yaml.Unmarshal(docRaw, &o); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			o.File, o.Raw = filepath.Base(f), docRaw
			out = append(out, o)
		}
	}
	if len(out) == 0 {
		t.Fatal("no objects in deploy/k8s")
	}
	return out
}

func (o object) decode(t *testing.T, v any) {
	t.Helper()
	if err := yaml.Unmarshal(o.Raw, v); err != nil {
		t.Fatalf("%s %s: %v", o.Kind, o.Metadata.Name, err)
	}
}

func find(objs []object, kind, name string) (object, bool) {
	for _, o := range objs {
		if o.Kind == kind && o.Metadata.Name == name {
			return o, true
		}
	}
	return object{}, false
}

var apiVersions = map[string]string{
	"Namespace": "v1", "ConfigMap": "v1", "Secret": "v1", "Service": "v1",
	"Deployment": "apps/v1", "Job": "batch/v1", "HorizontalPodAutoscaler": "autoscaling/v2",
	"PodDisruptionBudget": "policy/v1",
}

// TestKustomization: kustomization.yaml lists every manifest, each object
// has a current apiVersion and a unique name, and every mcplens image has
// an images: entry pinning its tag.
func TestKustomization(t *testing.T) {
	var k struct {
		Namespace string   `yaml:"namespace"`
		Resources []string `yaml:"resources"`
		Images    []struct {
			Name    string `yaml:"name"`
			NewName string `yaml:"newName"`
			NewTag  string `yaml:"newTag"`
		} `yaml:"images"`
	}
	readYAML(t, filepath.Join(k8sDir, "kustomization.yaml"), &k)
	files, _ := filepath.Glob(filepath.Join(k8sDir, "*.yaml"))
	var want []string
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" {
			want = append(want, b)
		}
	}
	if got := slices.Sorted(slices.Values(k.Resources)); !slices.Equal(got, want) {
		t.Errorf("kustomization resources %v, files %v", got, want)
	}
	objs := manifests(t)
	seen := map[string]bool{}
	for _, o := range objs {
		id := o.Kind + "/" + o.Metadata.Name
		if want, ok := apiVersions[o.Kind]; !ok || o.APIVersion != want {
			t.Errorf("%s: %s %s, want a kind of %v with its current apiVersion", o.File, o.APIVersion, o.Kind, apiVersions)
		}
		if o.Metadata.Name == "" || seen[id] {
			t.Errorf("%s: %s has no name or is defined twice", o.File, id)
		}
		seen[id] = true
	}
	if ns, ok := find(objs, "Namespace", k.Namespace); !ok || ns.Metadata.Name == "" {
		t.Errorf("kustomization namespace %q is not created by namespace.yaml", k.Namespace)
	}
	for _, o := range objs {
		if o.Kind != "Deployment" && o.Kind != "Job" {
			continue
		}
		var w workload
		o.decode(t, &w)
		for _, c := range w.Spec.Template.Spec.Containers {
			cmd, _ := checkImage(c.Image)
			if cmd == "" {
				continue
			}
			repo, tag := splitImage(c.Image)
			i := slices.IndexFunc(k.Images, func(e struct {
				Name    string `yaml:"name"`
				NewName string `yaml:"newName"`
				NewTag  string `yaml:"newTag"`
			}) bool {
				return e.Name == repo
			})
			if i < 0 || k.Images[i].NewTag == "" || k.Images[i].NewTag == "latest" || k.Images[i].NewTag != tag {
				t.Errorf("%s: image %s needs an images: entry in kustomization.yaml with newTag %s", o.File, c.Image, tag)
			}
		}
	}
}

// TestK8sWorkloads checks every Deployment and Job: pinned images, labels
// that select the pods, resources, non-root, probes on declared ports, and
// for mcplens binaries every --flag and MCPLENS_* variable (from env,
// envFrom ConfigMaps and Secrets) against the binary's --help, with
// --listen reachable and equal to the probed container port.
func TestK8sWorkloads(t *testing.T) {
	objs := manifests(t)
	for _, o := range objs {
		if o.Kind != "Deployment" && o.Kind != "Job" {
			continue
		}
		t.Run(o.Metadata.Name, func(t *testing.T) {
			var w workload
			o.decode(t, &w)
			pod := w.Spec.Template.Spec
			if o.Kind == "Deployment" {
				for k, v := range w.Spec.Selector.MatchLabels {
					if w.Spec.Template.Metadata.Labels[k] != v {
						t.Errorf("selector %s=%s does not match the pod labels", k, v)
					}
				}
			}
			if pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot {
				t.Error("pod securityContext.runAsNonRoot is not true")
			}
			for _, c := range pod.Containers {
				cmd, err := checkImage(c.Image)
				if err != nil {
					t.Error(err)
				}
				if kafka := "apache/kafka:" + kafkaVersion(t); strings.HasPrefix(c.Image, "apache/kafka:") && c.Image != kafka {
					t.Errorf("container %s: image %s, want %s (the version deploy/kafka/kafka.sh tests with)", c.Name, c.Image, kafka)
				}
				if c.Resources.Requests["cpu"] == "" || c.Resources.Requests["memory"] == "" || c.Resources.Limits["memory"] == "" {
					t.Errorf("container %s: want cpu and memory requests and a memory limit", c.Name)
				}
				if c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation || !slices.Contains(c.SecurityContext.Capabilities.Drop, "ALL") {
					t.Errorf("container %s: want allowPrivilegeEscalation false and capabilities drop ALL", c.Name)
				}
				checkRefs(t, objs, pod, c)
				if cmd != "" {
					checkBinaryContainer(t, objs, o, w, c, cmd)
				}
			}
		})
	}
}

// checkRefs: every ConfigMap, Secret and key a container or volume names
// is defined in deploy/k8s.
func checkRefs(t *testing.T, objs []object, pod podSpec, c container) {
	t.Helper()
	hasKey := func(kind string, r *keyRef) {
		o, ok := find(objs, kind, r.Name)
		_, inData := o.Data[r.Key]
		_, inString := o.StringData[r.Key]
		if !ok || (!inData && !inString) {
			t.Errorf("container %s: %s %s has no key %s", c.Name, kind, r.Name, r.Key)
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			continue
		}
		if r := e.ValueFrom.SecretKeyRef; r != nil {
			hasKey("Secret", r)
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
			hasKey("ConfigMap", r)
		}
	}
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef != nil {
			if _, ok := find(objs, "ConfigMap", ef.ConfigMapRef.Name); !ok {
				t.Errorf("container %s: no ConfigMap %s", c.Name, ef.ConfigMapRef.Name)
			}
		}
		if ef.SecretRef != nil {
			if _, ok := find(objs, "Secret", ef.SecretRef.Name); !ok {
				t.Errorf("container %s: no Secret %s", c.Name, ef.SecretRef.Name)
			}
		}
	}
	for _, v := range pod.Volumes {
		if v.Secret == nil {
			continue
		}
		for _, it := range v.Secret.Items {
			hasKey("Secret", &keyRef{Name: v.Secret.SecretName, Key: it.Key})
		}
		if len(v.Secret.Items) == 0 {
			if _, ok := find(objs, "Secret", v.Secret.SecretName); !ok {
				t.Errorf("volume %s: no Secret %s", v.Name, v.Secret.SecretName)
			}
		}
	}
}

// containerEnv is every variable a container sees: envFrom first, env
// over it, as the kubelet does. Secret values count as set.
func containerEnv(objs []object, c container) map[string]string {
	env := map[string]string{}
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef != nil {
			cm, _ := find(objs, "ConfigMap", ef.ConfigMapRef.Name)
			for k, v := range cm.Data {
				env[k] = v
			}
		}
		if ef.SecretRef != nil {
			s, _ := find(objs, "Secret", ef.SecretRef.Name)
			for k, v := range s.StringData {
				env[k] = v
			}
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			s, _ := find(objs, "Secret", e.ValueFrom.SecretKeyRef.Name)
			env[e.Name] = s.StringData[e.ValueFrom.SecretKeyRef.Key]
		case e.ValueFrom.ConfigMapKeyRef != nil:
			cm, _ := find(objs, "ConfigMap", e.ValueFrom.ConfigMapKeyRef.Name)
			env[e.Name] = cm.Data[e.ValueFrom.ConfigMapKeyRef.Key]
		}
	}
	return env
}

func checkBinaryContainer(t *testing.T, objs []object, o object, w workload, c container, cmd string) {
	t.Helper()
	pod := w.Spec.Template.Spec
	for _, p := range []*probe{c.LivenessProbe, c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("container %s: want HTTP liveness (/healthz) and readiness (/readyz) probes", c.Name)
			return
		}
	}
	if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("container %s: probes %s and %s, want /healthz and /readyz", c.Name, c.LivenessProbe.HTTPGet.Path, c.ReadinessProbe.HTTPGet.Path)
	}
	probed := map[string]bool{}
	for _, p := range []*probe{c.LivenessProbe, c.ReadinessProbe} {
		port := fmt.Sprint(p.HTTPGet.Port)
		for _, cp := range c.Ports {
			if cp.Name == port || strconv.Itoa(cp.ContainerPort) == port {
				probed[strconv.Itoa(cp.ContainerPort)] = true
			}
		}
		if len(probed) == 0 {
			t.Errorf("container %s: probe port %s is not a container port", c.Name, port)
		}
	}
	b := bin(t, cmd)
	if b == nil {
		unchecked(t, cmd, o.File+" "+o.Metadata.Name)
		return
	}
	set, errs := b.check(o.File+" "+o.Metadata.Name, append(slices.Clone(c.Command), c.Args...), containerEnv(objs, c))
	for _, err := range errs {
		t.Error(err)
	}
	port, err := listenPort(b.value(set, "listen"))
	if err != nil {
		t.Fatal(err)
	}
	if !probed[port] || len(probed) != 1 {
		t.Errorf("container %s listens on %s; its probes reach %v", c.Name, port, probed)
	}
	if _, ok := b.Flags["shutdown-timeout"]; ok {
		stop, _ := time.ParseDuration(b.value(set, "shutdown-timeout"))
		grace := 30 // the Kubernetes default
		if pod.TerminationGracePeriodSeconds != nil {
			grace = *pod.TerminationGracePeriodSeconds
		}
		if time.Duration(grace)*time.Second < stop+15*time.Second {
			t.Errorf("terminationGracePeriodSeconds %d: want at least --shutdown-timeout (%s) + 15s, or the kubelet kills the final flush", grace, stop)
		}
	}
	if _, ok := b.Flags["from"]; ok {
		checkConsumerGroup(t, objs, w, b.value(set, "from"))
	}
}

// checkConsumerGroup: the ingesters read the topic the Job creates, from
// the same brokers, in one group, never more of them than partitions.
func checkConsumerGroup(t *testing.T, objs []object, w workload, from string) {
	t.Helper()
	u, err := url.Parse(from)
	if err != nil || u.Scheme != "kafka" || u.Query().Get("group") == "" {
		t.Errorf("--from %q: want kafka://BROKERS/TOPIC?group=GROUP (one consumer group for every replica)", from)
		return
	}
	var topic string
	var partitions int
	for _, o := range objs {
		if o.Kind != "Job" {
			continue
		}
		var j workload
		o.decode(t, &j)
		for _, c := range j.Spec.Template.Spec.Containers {
			args := append(slices.Clone(c.Command), c.Args...)
			if !slices.Contains(args, "--create") {
				continue
			}
			topic, partitions = topicArgs(t, o.Metadata.Name, args)
			if b := argAfter(args, "--bootstrap-server"); !strings.Contains(","+u.Host+",", ","+b+",") {
				t.Errorf("the topic Job uses brokers %s, the ingester %s", b, u.Host)
			}
		}
	}
	if topic == "" {
		t.Error("no Job creates the ingester's topic")
		return
	}
	if got := strings.TrimPrefix(u.Path, "/"); got != topic {
		t.Errorf("ingest reads topic %s, the Job creates %s", got, topic)
	}
	replicas := 1
	if w.Spec.Replicas != nil {
		replicas = *w.Spec.Replicas
	}
	surge, _ := strconv.Atoi(strings.TrimSuffix(fmt.Sprint(w.Spec.Strategy.RollingUpdate.MaxSurge), "%"))
	if w.Spec.Strategy.RollingUpdate.MaxSurge == nil {
		surge = 1 // 25% rounds up to at least one
	}
	if replicas+surge > partitions {
		t.Errorf("%d ingest replicas (+%d during a rollout) for %d partitions: the extra ones idle", replicas, surge, partitions)
	}
}

// TestK8sServices: Services select pods of a Deployment and target a port
// it declares; the HPA scales an existing Deployment whose containers
// request CPU, from at least its replica count.
func TestK8sServices(t *testing.T) {
	objs := manifests(t)
	deployments := map[string]workload{}
	for _, o := range objs {
		if o.Kind == "Deployment" {
			var w workload
			o.decode(t, &w)
			deployments[o.Metadata.Name] = w
		}
	}
	for _, o := range objs {
		switch o.Kind {
		case "Service":
			var s struct {
				Spec struct {
					Selector map[string]string `yaml:"selector"`
					Ports    []struct {
						TargetPort any `yaml:"targetPort"`
					} `yaml:"ports"`
				} `yaml:"spec"`
			}
			o.decode(t, &s)
			var matched bool
			for name, w := range deployments {
				if !labelsMatch(s.Spec.Selector, w.Spec.Template.Metadata.Labels) {
					continue
				}
				matched = true
				for _, p := range s.Spec.Ports {
					if !declaresPort(w, fmt.Sprint(p.TargetPort)) {
						t.Errorf("Service %s: targetPort %v is not a port of Deployment %s", o.Metadata.Name, p.TargetPort, name)
					}
				}
			}
			if !matched {
				t.Errorf("Service %s selects no Deployment's pods", o.Metadata.Name)
			}
		case "PodDisruptionBudget":
			var p struct {
				Spec struct {
					Selector struct {
						MatchLabels map[string]string `yaml:"matchLabels"`
					} `yaml:"selector"`
				} `yaml:"spec"`
			}
			o.decode(t, &p)
			if !slices.ContainsFunc(slices.Collect(mapValues(deployments)), func(w workload) bool {
				return labelsMatch(p.Spec.Selector.MatchLabels, w.Spec.Template.Metadata.Labels)
			}) {
				t.Errorf("PodDisruptionBudget %s selects no Deployment's pods", o.Metadata.Name)
			}
		case "HorizontalPodAutoscaler":
			var h struct {
				Spec struct {
					ScaleTargetRef struct {
						Kind string `yaml:"kind"`
						Name string `yaml:"name"`
					} `yaml:"scaleTargetRef"`
					MinReplicas int `yaml:"minReplicas"`
					MaxReplicas int `yaml:"maxReplicas"`
					Metrics     []struct {
						Resource struct {
							Name string `yaml:"name"`
						} `yaml:"resource"`
					} `yaml:"metrics"`
				} `yaml:"spec"`
			}
			o.decode(t, &h)
			w, ok := deployments[h.Spec.ScaleTargetRef.Name]
			if !ok || h.Spec.ScaleTargetRef.Kind != "Deployment" {
				t.Errorf("HPA %s scales unknown %s %s", o.Metadata.Name, h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name)
				continue
			}
			if w.Spec.Replicas == nil || h.Spec.MinReplicas < *w.Spec.Replicas || h.Spec.MaxReplicas <= h.Spec.MinReplicas {
				t.Errorf("HPA %s: min %d max %d for a Deployment of %v replicas", o.Metadata.Name, h.Spec.MinReplicas, h.Spec.MaxReplicas, w.Spec.Replicas)
			}
			for _, m := range h.Spec.Metrics {
				if m.Resource.Name != "cpu" {
					continue
				}
				for _, c := range w.Spec.Template.Spec.Containers {
					if c.Resources.Requests["cpu"] == "" {
						t.Errorf("HPA %s scales on CPU but container %s requests none", o.Metadata.Name, c.Name)
					}
				}
			}
		}
	}
}

func labelsMatch(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func declaresPort(w workload, port string) bool {
	for _, c := range w.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == port || strconv.Itoa(p.ContainerPort) == port {
				return true
			}
		}
	}
	return false
}

func mapValues[K comparable, V any](m map[K]V) func(func(V) bool) {
	return func(yield func(V) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

// TestReadme: deploy/README.md covers what the issue asks of it and links
// the ClickHouse cluster DDL notes of deploy/clickhouse.
func TestReadme(t *testing.T) {
	raw, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	for _, want := range []string{"clickhouse/README.md", "partition", "consumer group", "rebalance", "exchange_id", "docker compose up", "kubectl apply -k"} {
		if !strings.Contains(text, want) {
			t.Errorf("deploy/README.md does not mention %q", want)
		}
	}
	if _, err := os.Stat(filepath.Join("clickhouse", "README.md")); err != nil {
		t.Logf("unchecked: deploy/clickhouse/README.md (the cluster DDL notes) does not exist yet; the link in deploy/README.md points at it")
	}
}

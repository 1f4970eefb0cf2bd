package deploycheck_test

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/apollo-platform/apollo/internal/app"
)

const root = "../.."

var update = flag.Bool("update", false, "rewrite deploy/kubernetes/grafana-dashboard.yaml from monitoring/dashboards/apollo.json")

// serveArgs parses an `apollo serve` command line with serve's own flags:
// a flag misspelt or a bad value in a deploy file fails here.
func serveArgs(t *testing.T, where string, args []string) app.Config {
	t.Helper()
	if len(args) == 0 || args[0] != "serve" {
		t.Fatalf("%s: command %q is not apollo serve", where, args)
	}
	cfg := app.DefaultConfig()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.RegisterFlags(fs)
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 0 {
		t.Fatalf("%s: apollo %s: %v (left %q)", where, strings.Join(args, " "), err, fs.Args())
	}
	for _, a := range args {
		if strings.HasPrefix(strings.TrimLeft(a, "-"), "redis-password=") || a == "--redis-password" {
			t.Errorf("%s: the Redis password is given by flag; use --redis-password-file", where)
		}
	}
	return cfg
}

// The image is the static binary alone, as a non-root user, built from a
// binary made on the host.
func TestDockerfileCopiesAStaticBinaryAndRunsAsNonRoot(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var from, user, entry, copySrc string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		instr, rest, _ := strings.Cut(line, " ")
		switch strings.ToUpper(instr) {
		case "FROM":
			from = rest
		case "USER":
			user = rest
		case "ENTRYPOINT":
			entry = rest
		case "COPY":
			copySrc = strings.Fields(rest)[0]
		case "RUN":
			t.Errorf("RUN %s: the image has no shell to run it", rest)
		}
	}
	if from != "scratch" {
		t.Errorf("FROM %q, want scratch: nothing can be pulled here, and nothing but the binary is needed", from)
	}
	uid, _, _ := strings.Cut(user, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("USER %q, want a numeric non-root user", user)
	}
	var ep []string
	if err := json.Unmarshal([]byte(entry), &ep); err != nil || len(ep) != 1 || ep[0] != "/apollo" {
		t.Errorf("ENTRYPOINT %s, want the exec form [\"/apollo\"] (no shell)", entry)
	}
	if copySrc != "bin/apollo-static" {
		t.Errorf("COPY %s, want bin/apollo-static (make image-bin)", copySrc)
	}
	mk, _ := os.ReadFile(filepath.Join(root, "Makefile"))
	if !bytes.Contains(mk, []byte("CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o bin/apollo-static ./cmd/apollo")) {
		t.Error("the Makefile's image-bin target does not build bin/apollo-static with CGO_ENABLED=0")
	}
	// Built as image-bin builds it, the binary has no dynamic loader: it
	// runs in an empty image.
	bin := filepath.Join(t.TempDir(), "apollo-static")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./cmd/apollo")
	cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary needs a dynamic loader: it would not start FROM scratch")
		}
	}
}

// compose is the part of a compose file the checks read.
type compose struct {
	Services map[string]struct {
		Image     string          `json:"image"`
		Command   json.RawMessage `json:"command"`
		DependsOn json.RawMessage `json:"depends_on"`
		Ports     []string        `json:"ports"`
		Secrets   []string        `json:"secrets"`
		ReadOnly  bool            `json:"read_only"`
		CapDrop   []string        `json:"cap_drop"`
		Volumes   []string        `json:"volumes"`
	} `json:"services"`
	Secrets map[string]struct {
		File string `json:"file"`
	} `json:"secrets"`
}

// The compose file: a 3 × 2 cluster joined once, two Apollo instances whose
// command lines serve accepts, secrets from files kept out of git, and a
// Prometheus that scrapes both with the mixin's rules.
func TestComposeFileRunsAClusterTwoInstancesAndPrometheus(t *testing.T) {
	dir := filepath.Join(root, "deploy", "compose")
	b, err := os.ReadFile(filepath.Join(dir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	var redis, apollo []string
	hostPorts := map[string]string{}
	for name, s := range c.Services {
		switch {
		case strings.HasPrefix(name, "redis-") && name != "redis-init":
			redis = append(redis, name)
		case strings.HasPrefix(name, "apollo-"):
			apollo = append(apollo, name)
			var args []string
			if err := json.Unmarshal(s.Command, &args); err != nil {
				t.Fatalf("%s: command: %v", name, err)
			}
			cfg := serveArgs(t, name, args)
			if cfg.HealthListen == "" || cfg.AdminTokenFile == "" || cfg.Redis.Password != "" {
				t.Errorf("%s: want a health listener, an admin token file and the password from a file", name)
			}
			if !s.ReadOnly || !slices.Contains(s.CapDrop, "ALL") {
				t.Errorf("%s: want read_only and cap_drop ALL", name)
			}
		}
		for _, p := range s.Ports {
			parts := strings.Split(p, ":")
			host := strings.Join(parts[:len(parts)-1], ":")
			if other, dup := hostPorts[host]; dup {
				t.Errorf("host port %s published by %s and %s", host, other, name)
			}
			hostPorts[host] = name
			if strings.HasSuffix(p, ":9090") && !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("%s publishes %s beyond loopback", name, p)
			}
		}
		for _, sec := range s.Secrets {
			if _, ok := c.Secrets[sec]; !ok {
				t.Errorf("%s uses secret %s, which is not declared", name, sec)
			}
		}
		var deps map[string]any
		var depList []string
		if len(s.DependsOn) > 0 && json.Unmarshal(s.DependsOn, &deps) != nil {
			if err := json.Unmarshal(s.DependsOn, &depList); err != nil {
				t.Fatalf("%s: depends_on: %v", name, err)
			}
		}
		for d := range deps {
			depList = append(depList, d)
		}
		for _, d := range depList {
			if _, ok := c.Services[d]; !ok {
				t.Errorf("%s depends on %s, which is not a service", name, d)
			}
		}
	}
	if len(redis) != 6 || len(apollo) != 2 {
		t.Errorf("%d redis nodes and %d apollo instances, want 6 and 2", len(redis), len(apollo))
	}
	init := string(c.Services["redis-init"].Command)
	if !strings.Contains(init, "--cluster-replicas 1") {
		t.Errorf("redis-init does not make 3 primaries with a replica each: %s", init)
	}
	ignored, _ := os.ReadFile(filepath.Join(root, ".gitignore"))
	for name, s := range c.Secrets {
		rel := filepath.ToSlash(filepath.Join("deploy", "compose", s.File))
		if !bytes.Contains(ignored, []byte(rel+"\n")) {
			t.Errorf("secret %s's file %s is not in .gitignore", name, rel)
		}
	}
	prom, err := os.ReadFile(filepath.Join(dir, "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range apollo {
		if !bytes.Contains(prom, []byte(a+":9091")) {
			t.Errorf("prometheus.yml does not scrape %s's health listener", a)
		}
	}
	if vols := strings.Join(c.Services["prometheus"].Volumes, " "); !strings.Contains(vols, "../../monitoring/rules:") {
		t.Errorf("Prometheus does not mount the mixin's rules: %s", vols)
	}
	if _, err := os.Stat(filepath.Join(dir, "..", "..", "monitoring", "rules")); err != nil {
		t.Error(err)
	}
}

// documents splits a multi-document YAML file.
func documents(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var docs [][]byte
	for _, d := range bytes.Split(b, []byte("\n---\n")) {
		if len(bytes.TrimSpace(d)) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

// kinds decodes each document strictly (an unknown or misplaced field
// fails) into its API type.
func kinds(t *testing.T, path string) (deps []appsv1.Deployment, svcs []corev1.Service, pdbs []policyv1.PodDisruptionBudget, cms []corev1.ConfigMap) {
	t.Helper()
	for i, d := range documents(t, path) {
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(d, &meta); err != nil {
			t.Fatalf("%s document %d: %v", path, i, err)
		}
		where := fmt.Sprintf("%s document %d (%s)", path, i, meta.Kind)
		switch meta.APIVersion + " " + meta.Kind {
		case "apps/v1 Deployment":
			deps = append(deps, decodeAs[appsv1.Deployment](t, where, d))
		case "v1 Service":
			svcs = append(svcs, decodeAs[corev1.Service](t, where, d))
		case "policy/v1 PodDisruptionBudget":
			pdbs = append(pdbs, decodeAs[policyv1.PodDisruptionBudget](t, where, d))
		case "v1 ConfigMap":
			cms = append(cms, decodeAs[corev1.ConfigMap](t, where, d))
		default:
			t.Fatalf("%s: unexpected %s", where, meta.APIVersion)
		}
	}
	return
}

// decodeAs decodes doc strictly as a T, or fails the test.
func decodeAs[T any](t *testing.T, where string, doc []byte) T {
	t.Helper()
	var x T
	if err := decodeStrict(doc, &x); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	return x
}

// decodeStrict decodes a YAML document as the API server would: field
// names case-sensitive, an unknown or repeated field an error (encoding/json,
// and so yaml.UnmarshalStrict, matches field names case-insensitively).
func decodeStrict(doc []byte, v any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(j, v)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// The manifests: probes on the health listener, a preStop pause and a
// grace period that covers the drain, a PodDisruptionBudget, resources, a
// restrictive securityContext, Services that select the pods' ports.
func TestKubernetesManifestsAreValidAndSafe(t *testing.T) {
	deps, svcs, pdbs, _ := kinds(t, filepath.Join(root, "deploy", "kubernetes", "apollo.yaml"))
	if len(deps) != 1 || len(svcs) < 1 || len(pdbs) != 1 {
		t.Fatalf("%d deployments, %d services, %d PDBs", len(deps), len(svcs), len(pdbs))
	}
	d := deps[0]
	pod := d.Spec.Template.Spec
	labels := d.Spec.Template.Labels
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers", len(pod.Containers))
	}
	c := pod.Containers[0]
	cfg := serveArgs(t, "deployment", c.Args)
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if !strings.HasSuffix(cfg.HealthListen, fmt.Sprintf(":%d", ports["health"])) || !strings.HasSuffix(cfg.Listen, fmt.Sprintf(":%d", ports["api"])) {
		t.Errorf("ports %v do not match --listen %s and --health-listen %s", ports, cfg.Listen, cfg.HealthListen)
	}
	if !strings.HasPrefix(cfg.AdminListen, "127.0.0.1:") {
		t.Errorf("--admin-listen %s: the admin routes should stay on the pod's loopback", cfg.AdminListen)
	}
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		want := map[string]string{"readiness": "/readyz", "liveness": "/livez"}[name]
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != want || p.HTTPGet.Port.String() != "health" {
			t.Errorf("%s probe %+v, want GET %s on the health port", name, p, want)
		}
	}
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil || c.Lifecycle.PreStop.Sleep.Seconds < 1 {
		t.Fatal("no preStop sleep: the pod would get SIGTERM while still in the Service's endpoints")
	}
	need := c.Lifecycle.PreStop.Sleep.Seconds + int64((cfg.DrainDelay + cfg.ShutdownTimeout).Seconds()) + 5
	if g := pod.TerminationGracePeriodSeconds; g == nil || *g < need {
		t.Errorf("terminationGracePeriodSeconds %v, want at least %d (preStop + drain + shutdown + 5 s to hand the partitions back)", g, need)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %+v: want CPU and memory requests and a memory limit", c.Resources)
	}
	sc, psc := c.SecurityContext, pod.SecurityContext
	if sc == nil || psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("securityContext pod %+v container %+v: want non-root, read-only root, no escalation, ALL dropped, RuntimeDefault seccomp", psc, sc)
	}
	if !strings.HasPrefix(cfg.AdminTokenFile, "/run/secrets/") || len(pod.Volumes) == 0 || pod.Volumes[0].Secret == nil {
		t.Errorf("the admin token and password should come from a Secret volume")
	}
	// The kubelet replaces a Secret's files when it changes, except under
	// a subPath mount: the password file must follow a rotation, which
	// Apollo reads for every new Redis connection.
	var passwordFile string
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--redis-password-file="); ok {
			passwordFile = v
		}
	}
	if passwordFile == "" {
		t.Error("no --redis-password-file=… among the container's arguments")
	}
	for _, m := range c.VolumeMounts {
		mount := strings.TrimSuffix(m.MountPath, "/")
		if (passwordFile == mount || strings.HasPrefix(passwordFile, mount+"/")) && m.SubPath != "" {
			t.Errorf("the password file is mounted with subPath %q: a rotated Secret would never reach it", m.SubPath)
		}
	}
	matches := func(sel map[string]string) bool {
		for k, v := range sel {
			if labels[k] != v {
				return false
			}
		}
		return len(sel) > 0
	}
	if !matches(d.Spec.Selector.MatchLabels) || !matches(pdbs[0].Spec.Selector.MatchLabels) {
		t.Error("the Deployment's or the PDB's selector does not match the pods")
	}
	if pdbs[0].Spec.MaxUnavailable == nil && pdbs[0].Spec.MinAvailable == nil {
		t.Error("the PDB bounds nothing")
	}
	for _, s := range svcs {
		if !matches(s.Spec.Selector) {
			t.Errorf("Service %s does not select the pods", s.Name)
		}
		for _, p := range s.Spec.Ports {
			if _, ok := ports[p.TargetPort.String()]; !ok {
				t.Errorf("Service %s targets port %s, which the container does not name", s.Name, p.TargetPort.String())
			}
		}
	}
}

// The dashboard ships as a ConfigMap (for Grafana's sidecar), the same
// JSON as monitoring/dashboards/apollo.json.
func TestDashboardConfigMapIsTheMixinsDashboard(t *testing.T) {
	dash, err := os.ReadFile(filepath.Join(root, "monitoring", "dashboards", "apollo.json"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "deploy", "kubernetes", "grafana-dashboard.yaml")
	if *update {
		cm := corev1.ConfigMap{Data: map[string]string{"apollo.json": string(dash)}}
		cm.APIVersion, cm.Kind, cm.Name = "v1", "ConfigMap", "apollo-dashboard"
		cm.Labels = map[string]string{"grafana_dashboard": "1", "app.kubernetes.io/name": "apollo"}
		out, err := yaml.Marshal(cm)
		if err != nil {
			t.Fatal(err)
		}
		head := "# Generated from monitoring/dashboards/apollo.json by\n# go test ./internal/deploycheck -run Dashboard -update\n"
		if err := os.WriteFile(path, append([]byte(head), out...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, _, _, cms := kinds(t, path)
	if len(cms) != 1 || cms[0].Data["apollo.json"] != string(dash) || cms[0].Labels["grafana_dashboard"] != "1" {
		t.Fatalf("%s is not the dashboard: run go test ./internal/deploycheck -run Dashboard -update", path)
	}
}

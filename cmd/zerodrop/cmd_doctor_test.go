package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"zerodrop.dev/zerodrop/fixtures"
)

func writeFixture(t *testing.T, dir, name string, opts ...fixtures.Option) string {
	t.Helper()
	w, err := fixtures.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := w.RenderYAML()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runDoctorCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := runDoctor(context.Background(), &cli{stdout: &out, stderr: &errOut, version: "test", keyDir: testKeyDir}, strings.NewReader(stdin), args)
	return code, out.String(), errOut.String()
}

func TestDoctorCommand(t *testing.T) {
	dir := t.TempDir()
	naive := writeFixture(t, dir, "naive.yaml", fixtures.WithHardening(fixtures.Naive), fixtures.WithPDB(fixtures.PDBBlocking))
	hardened := writeFixture(t, dir, "hardened.yaml", fixtures.WithHardening(fixtures.Hardened))
	// The keepalive-unready incident's fix: keep-alive off.
	hardenedNoKA := writeFixture(t, dir, "hardened-no-keepalive.yaml", fixtures.WithHardening(fixtures.Hardened), fixtures.WithKeepAlive(false))
	naiveCluster := writeFixture(t, dir, "naive-cluster.yaml", fixtures.WithHardening(fixtures.Naive), fixtures.WithPolicy("Cluster"), fixtures.WithName("other"))
	naiveBytes, err := os.ReadFile(naive)
	if err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "broken.yaml")
	if err := os.WriteFile(broken, []byte("apiVersion: v1\nkind: Service\nmetadata:\n  name: x\n- oops\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// A ClusterIP Service and its Deployment (readiness that can flip on
	// its own, keep-alive on) behind a route on Gateway gw.
	const routed = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}\n---\n" +
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n" +
		"  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers:\n      - name: web\n        image: web:1\n" +
		"        ports: [{containerPort: 8080}]\n        readinessProbe: {httpGet: {path: /ready, port: 8080}}\n---\n"
	route := func(apiVersion, kind, backend string) string {
		return routed + "apiVersion: " + apiVersion + "\nkind: " + kind + "\nmetadata: {name: r}\nspec:\n  parentRefs: [{name: gw}]\n" +
			"  rules: [{backendRefs: [{name: '" + backend + "', port: 80}]}]\n"
	}
	const gkeGateway = "---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw}\n" +
		"spec: {gatewayClassName: gke-l7-global-external-managed, listeners: [{name: http, protocol: HTTP, port: 80}]}\n"

	tests := []struct {
		name   string
		stdin  string
		args   []string
		code   int
		stdout []string
		stderr []string
	}{
		{name: "naive fails", args: []string{naive}, code: 1,
			stdout: []string{"ERROR   ZD002", "ERROR   ZD020", naive + ":", "summary: 2 error(s)"}},
		{name: "kubernetes version", args: []string{"--kubernetes-version", "v1.25.16", "--lb-profile", "generic", hardened}, code: 1,
			stdout: []string{"ERROR   ZD002", "on Kubernetes 1.25 kube-proxy sends no new connection to a terminating endpoint", "Kubernetes 1.25"}},
		{name: "bad kubernetes version", args: []string{"--kubernetes-version", "2.1", hardened}, code: 2, stderr: []string{"--kubernetes-version", "want 1.MINOR"}},
		{name: "hardened passes on the LB it was built for", args: []string{"--lb-profile", "generic", hardened}, code: 0,
			stdout: []string{"INFO    ZD041 keepalive-reaches-unready", "summary: 0 error(s), 0 warning(s), 1 info"}},
		{name: "hardened without keep-alive has nothing to say", args: []string{"--lb-profile", "generic", hardenedNoKA}, code: 0, stdout: []string{"no findings", "summary: 0 error(s), 0 warning(s), 0 info"}},
		// Built for generic's 30 s, it is not safe behind an LB that takes 60 s
		// (the AWS Classic ELB), which a Service that names no LB may get.
		{name: "hardened without a named LB", args: []string{hardened}, code: 1,
			stdout: []string{"lb=any of aws-elb|", "ERROR   ZD002", "no LB named: holds on aws-elb; not on", "gke-l4"}},
		{name: "fail-on none", args: []string{"--fail-on", "none", naive}, code: 0},
		{name: "naive Cluster has only warnings", args: []string{naiveCluster}, code: 0, stdout: []string{"WARNING ZD004"}},
		{name: "fail-on warning", args: []string{"--fail-on=warning", naiveCluster}, code: 1},
		{name: "flags after files", args: []string{naiveCluster, "--fail-on", "warning"}, code: 1},
		{name: "directory", args: []string{dir + "/", "--fail-on", "none"}, code: 2, stderr: []string{"broken.yaml:5", "did not find expected key"}},
		{name: "stdin", stdin: string(naiveBytes), args: []string{"-"}, code: 1, stdout: []string{"<stdin>:"}},
		{name: "lb profile flag", args: []string{"--lb-profile", "aws-elb", hardened}, code: 1, stdout: []string{"lb=aws-elb", "ZD002"}},
		{name: "bad yaml names file and line", args: []string{broken}, code: 2, stderr: []string{broken + ":5: invalid YAML"}},
		{name: "missing file", args: []string{filepath.Join(dir, "nope.yaml")}, code: 2, stderr: []string{"nope.yaml"}},
		{name: "unknown profile", args: []string{"--lb-profile", "nimbus", hardened}, code: 2, stderr: []string{"unknown profile", "gcp-nlb"}},
		{name: "unknown output", args: []string{"-o", "xml", hardened}, code: 2, stderr: []string{"unknown output"}},
		{name: "unknown severity", args: []string{"--fail-on", "fatal", hardened}, code: 2, stderr: []string{"--fail-on"}},
		{name: "files and cluster", args: []string{"--cluster", hardened}, code: 2, stderr: []string{"not both"}},
		{name: "all-namespaces with files", args: []string{"-A", hardened}, code: 2, stderr: []string{"--all-namespaces"}},
		{name: "list rules", args: []string{"--list-rules"}, code: 0, stdout: []string{"ZD001", "serving-ends-before-lb-moves", "ZD040"}},
		{name: "list profiles", args: []string{"--list-profiles"}, code: 0, stdout: []string{"gcp-nlb", "24s", "ingress-gce"}},
		// The recipe per profile and policy: with Cluster the kube-proxy
		// margin whatever the LB, with Local the LB's lag.
		{name: "list recipes", args: []string{"--list-recipes"}, code: 0, stdout: []string{"endpoint-removal", "lb-health-check", "serving-condition", "BackendConfig: /healthz on the healthCheckNodePort, 3s x 2", "LB CHECK"}},
		{name: "help", args: []string{"--help"}, code: 0, stdout: []string{"Usage: zerodrop doctor", "--lb-profile"}},
		// A TCP route's Service is judged; its Gateway carries each client
		// connection to one Pod (ZD041, not ZD040); the Gateway is not given.
		{name: "tcp route", stdin: route("gateway.networking.k8s.io/v1alpha2", "TCPRoute", "web"), args: []string{"-"}, code: 0,
			stdout: []string{"service/default/web ", "l4=tcproute/default/r", "INFO    ZD041", "through tcproute/default/r stays on the Pod",
				"parent gateway/default/gw is not in the input"}},
		{name: "GKE gateway", stdin: route("gateway.networking.k8s.io/v1", "HTTPRoute", "web") + gkeGateway, args: []string{"-"}, code: 0,
			stdout: []string{"lb=gclb-neg", "GKE's Gateway with container-native (NEG) backends", "l7=httproute/default/r (container-native: to Pods directly)"}},
		{name: "placeholder backend", stdin: route("gateway.networking.k8s.io/v1", "HTTPRoute", "{{ .Values.svc }}"), args: []string{"-"}, code: 2,
			stderr: []string{"<stdin>:", "spec.rules[0].backendRefs[0].name is a template placeholder", "render the template first"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runDoctorCLI(t, tc.stdin, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
			for _, w := range tc.stdout {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range tc.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestDoctorMachineOutputs(t *testing.T) {
	dir := t.TempDir()
	naive := writeFixture(t, dir, "naive.yaml", fixtures.WithHardening(fixtures.Naive))

	code, out, errOut := runDoctorCLI(t, "", "-o", "json", naive)
	if code != 1 {
		t.Fatalf("json: exit %d (%s)", code, errOut)
	}
	var rep struct {
		Version  int `json:"version"`
		Findings []struct {
			Rule     string `json:"rule"`
			Severity string `json:"severity"`
			File     string `json:"file"`
			Line     int    `json:"line"`
		} `json:"findings"`
		Summary map[string]int `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("json output: %v\n%s", err, out)
	}
	if rep.Summary["error"] != 1 || len(rep.Findings) == 0 || rep.Findings[0].File != naive || rep.Findings[0].Line < 1 {
		t.Errorf("json report = %+v", rep)
	}

	code, out, errOut = runDoctorCLI(t, "", "--output", "sarif", naive)
	if code != 1 {
		t.Fatalf("sarif: exit %d (%s)", code, errOut)
	}
	var sarif struct {
		Version string `json:"version"`
		Runs    []struct {
			Results []struct {
				RuleID    string `json:"ruleId"`
				Locations []struct {
					PhysicalLocation struct {
						Region struct {
							StartLine int `json:"startLine"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &sarif); err != nil {
		t.Fatalf("sarif output: %v", err)
	}
	if sarif.Version != "2.1.0" || len(sarif.Runs) != 1 || len(sarif.Runs[0].Results) != len(rep.Findings) ||
		sarif.Runs[0].Results[0].Locations[0].PhysicalLocation.Region.StartLine < 1 {
		t.Errorf("sarif = %+v", sarif)
	}

	code, out, _ = runDoctorCLI(t, "", "--list-profiles", "-o", "json")
	if code != 0 || !strings.Contains(out, `"removalLag": "24s"`) {
		t.Errorf("profiles json (exit %d):\n%s", code, out)
	}
}

func TestDoctorCluster(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", filepath.Join(home, "absent"))

	code, _, errOut := runDoctorCLI(t, "")
	if code != 2 || !strings.Contains(errOut, "no input") {
		t.Errorf("no files and no kubeconfig: exit %d, stderr %q", code, errOut)
	}

	// A kubeconfig whose API server is a closed loopback port: the read must
	// fail fast, exit 2 and say which server it tried.
	kc := filepath.Join(home, "kubeconfig")
	cfg := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: t}
contexts:
- name: ctx
  context: {cluster: c, user: u, namespace: zd}
current-context: ctx
`
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runDoctorCLI(t, "", "--kubeconfig", kc, "--timeout", "5s")
	if code != 2 || !strings.Contains(errOut, "127.0.0.1:1") || !strings.Contains(errOut, "namespace zd") {
		t.Errorf("unreachable cluster: exit %d, stderr %q", code, errOut)
	}
}

// TestDoctorRegistered goes through the command table like a user would.
func TestDoctorRegistered(t *testing.T) {
	code, out, errOut := runCLI(t, "doctor", "--list-rules")
	if code != 0 || !strings.Contains(out, "ZD020") {
		t.Errorf("zerodrop doctor --list-rules: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, "--help")
	if code != 0 || !strings.Contains(out, "doctor") {
		t.Errorf("usage does not list doctor:\n%s", out)
	}
}

// The doctor stops reading stdin when its context is cancelled (Ctrl-C,
// SIGTERM), whatever stdin does, and says so.
func TestDoctorStopsReadingWhenInterrupted(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	type res struct {
		code        int
		out, errOut string
	}
	done := make(chan res, 1)
	go func() {
		var out, errOut bytes.Buffer
		code := runDoctor(ctx, &cli{stdout: &out, stderr: &errOut, version: "test", keyDir: testKeyDir}, pr, []string{"-"})
		done <- res{code, out.String(), errOut.String()}
	}()
	if _, err := pw.Write([]byte("apiVersion: v1\nkind: Service\n")); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case r := <-done:
		if r.code != exitBroken || !strings.Contains(r.errOut, "zerodrop doctor: interrupted: <stdin>") || r.out != "" {
			t.Errorf("exit %d, stdout %q, stderr %q; want 2 and an interruption on <stdin>", r.code, r.out, r.errOut)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the doctor still reads stdin after its context was cancelled")
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func runOwnCLI(t *testing.T, stdin string, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	getenv := func(k string) string { return env[k] }
	code := runOwn(context.Background(), &cli{stdout: &out, stderr: &errOut, version: "test", keyDir: testKeyDir}, strings.NewReader(stdin), getenv, args)
	return code, out.String(), errOut.String()
}

// The rolling-update-local configuration behind GKE's L4 LB: the doctor reads the
// Service's annotation (gke-l4, 3 s x 2), finds the 10 s preStop long
// enough, and predicts drops only on LBs whose lag outlasts it.
func TestOwnDryRunRollingUpdateLocal(t *testing.T) {
	code, out, errOut := runOwnCLI(t, "", nil, "--dry-run", "testdata/rolling-update-local.yaml")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"Stand-in for deployment/shop/web behind service/shop/web (testdata/rolling-update-local.yaml:20)",
		"knobs: 23 of 24 kept as written; containers[web].lifecycle changed",
		"preStop: /bin/sh -c sleep 10 -> sleep 10s",
		"disruption           gke-l4",
		"rolling-update       risk (ZD033)",
	} {
		if !containsSquashed(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runOwnCLI(t, "", nil, "--dry-run", "--lb-profile", "gke-l4,aws-nlb", "--scenario", "drain-node", "testdata/rolling-update-local.yaml")
	if code != exitOK || !containsSquashed(out, "drain-node  risk (ZD010)  drops (ZD002,ZD010)") {
		t.Errorf("exit %d, aws-nlb's 30 s lag outlasts the 10 s preStop:\n%s", code, out)
	}
}

func TestOwnRenderIsAppliable(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "standin.yaml")
	if code, _, errOut := runOwnCLI(t, "", nil, "--dry-run", "--render", p, "testdata/rolling-update-local.yaml"); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// The doctor reads the stand-in as it reads the original: same rules
	// fire on both (the stand-in's changes here touch no rule).
	rules := func(path string) []string {
		code, out, errOut := runDoctorCLI(t, "", "--lb-profile", "gcp-nlb", "--fail-on", "none", "-o", "json", path)
		if code != exitOK {
			t.Fatalf("doctor %s: exit %d %s", path, code, errOut)
		}
		var rep struct {
			Findings []struct{ Rule string } `json:"findings"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, f := range rep.Findings {
			ids = append(ids, f.Rule)
		}
		return ids
	}
	orig, stand := rules("testdata/rolling-update-local.yaml"), rules(p)
	if len(orig) == 0 || strings.Join(orig, ",") != strings.Join(stand, ",") {
		t.Errorf("rules on the manifests %v, on the stand-in %v", orig, stand)
	}
}

func TestOwnBadInput(t *testing.T) {
	dir := t.TempDir()
	seed, err := os.ReadFile("testdata/rolling-update-local.yaml")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	twoLB := string(seed) + "---\n" + strings.Replace(string(seed[strings.Index(string(seed), "apiVersion: v1"):]), "name: web\n  namespace: shop\n  annotations", "name: web2\n  namespace: shop\n  annotations", 1)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no input", []string{"--dry-run"}, "give the manifests"},
		{"broken YAML", []string{write("broken.yaml", "kind: Service\nmetadata: {name: x\n")}, "broken.yaml:2: invalid YAML"},
		{"no LB Service", []string{write("nolb.yaml", strings.Replace(string(seed), "type: LoadBalancer", "type: ClusterIP", 1))}, "no Service of type LoadBalancer"},
		{"DaemonSet", []string{write("ds.yaml", strings.Replace(strings.Replace(string(seed), "kind: Deployment", "kind: DaemonSet", 1), "  replicas: 3\n", "", 1))}, "daemonset/shop/web: DaemonSet is not supported"},
		{"two LB Services", []string{write("two.yaml", twoLB)}, "2 Services to stand in for"},
		{"unknown scenario", []string{"--scenario", "scale-up", "testdata/rolling-update-local.yaml"}, `"scale-up" is not a disruption`},
		{"unknown LB", []string{"--lb-profile", "f5", "testdata/rolling-update-local.yaml"}, `"f5" is not a profile`},
		{"unknown image mode", []string{"--image", "mine", "testdata/netexec.yaml"}, `--image "mine": want echo`},
		{"app flag with own image", []string{"--image", "own", "--app-drain", "5s", "testdata/netexec.yaml"}, "--app-drain models a server"},
		{"hook with own image", []string{"--image=own", "--hook", "5s", "testdata/netexec.yaml"}, "--hook models a server"},
		{"path without own image", []string{"--path", "/healthz", "testdata/netexec.yaml"}, "--path is for --image=own"},
		{"relative path", []string{"--image=own", "--path", "healthz", "testdata/netexec.yaml"}, `--path "healthz": want an absolute path`},
		{"pool scenario on an existing cluster", []string{"--provider", "existing", "--scenario", "drain-pool-with-pdb", "testdata/netexec.yaml"}, "adds or removes nodes"},
		{"own image missing a Secret", []string{"--image=own", write("secret.yaml", strings.Replace(netexec(t), "readinessProbe:",
			"env: [{name: TOKEN, valueFrom: {secretKeyRef: {name: api, key: token}}}]\n        readinessProbe:", 1))},
			"names secret/web/api, which the input does not hold"},
	} {
		code, _, errOut := runOwnCLI(t, "", nil, tc.args...)
		if code != exitBroken || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", tc.name, code, errOut, tc.want)
		}
	}
}

// --prove-fix under --dry-run: the doctor's fixes, written whole, and its
// prediction for them (the measured before and after need a cluster).
func TestOwnProveFixDryRun(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fixed.yaml")
	code, out, errOut := runOwnCLI(t, "", nil, "--dry-run", "--prove-fix", "--fix-out", p, "--lb-profile", "gke-l4,gcp-nlb", "testdata/rolling-update-local.yaml")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		`ZD002 deployment/shop/web: container web: lifecycle.preStop.exec sleeps 29 s ("/bin/sh -c sleep 29"); terminationGracePeriodSeconds: 44`,
		"Doctor's prediction with the fixes:\n  disruption           gke-l4        gcp-nlb\n  rolling-update       no drops      no drops\n  unready-keepalive    risk (ZD041)  risk (ZD041)",
	} {
		if !containsSquashed(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// The fixed file is the user's objects (their image, their namespace)
	// with the fixes, and the doctor finds nothing left to fix in it.
	if !strings.Contains(string(b), "image: registry.example/web:1.0") || !strings.Contains(string(b), "namespace: shop") {
		t.Errorf("fixed file:\n%s", b)
	}
	// Later definitions win, as with kubectl apply: the fixed Deployment
	// replaces the original next to its Service.
	code, out, errOut = runDoctorCLI(t, "", "--lb-profile", "gcp-nlb", "--fail-on", "none", "testdata/rolling-update-local.yaml", p)
	if code != exitOK || !strings.Contains(out, "service/shop/web") || strings.Contains(out, "ZD002") {
		t.Errorf("the fixed Deployment next to its Service (exit %d, %s): want the Service judged and no ZD002:\n%s", code, errOut, out)
	}
}

func netexec(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/netexec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// --image=own keeps the user's container as written and says what the
// load can and cannot tell; a readiness flip needs the echo server's
// switch, so that disruption is left out with the reason.
func TestOwnImageDryRun(t *testing.T) {
	code, out, errOut := runOwnCLI(t, "", nil, "--dry-run", "--image=own", "--path", "/hostname", "--lb-profile", "gcp-nlb", "testdata/netexec.yaml")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"serving container netexec: as your image does (registry.k8s.io/e2e-test-images/agnhost:2.56, run as written)",
		"load: port 80, path /hostname, 3 replicas",
		"answers are counted by status only",
		"imagePullPolicy: now Never",
		"unready-keepalive: left out: your own image runs",
		"rolling-update       drops (ZD002,ZD033)",
	} {
		if !containsSquashed(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The echo stand-in of the same manifests keeps the readiness flip.
	_, out, _ = runOwnCLI(t, "", nil, "--dry-run", "--lb-profile", "gcp-nlb", "testdata/netexec.yaml")
	if strings.Contains(out, "left out") || !strings.Contains(out, "zerodrop/echo-server:dev") {
		t.Errorf("echo stand-in:\n%s", out)
	}
}

// containsSquashed is strings.Contains with runs of spaces as one: the
// tables' column widths follow the longest disruption name.
func containsSquashed(s, sub string) bool {
	sq := regexp.MustCompile(` +`)
	return strings.Contains(sq.ReplaceAllString(s, " "), sq.ReplaceAllString(sub, " "))
}

// --image=own with what the Pods name: -n puts the Pods and what they name
// in one namespace, and the doctor's fixed copy keeps them too.
func TestOwnImageReferencedObjects(t *testing.T) {
	in := strings.NewReplacer("  namespace: web\n", "",
		"        readinessProbe:", "        envFrom: [{configMapRef: {name: netexec-conf}}]\n        readinessProbe:").Replace(netexec(t)) +
		"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: netexec-conf\ndata: {MODE: strict}\n"
	p := filepath.Join(t.TempDir(), "in.yaml")
	if err := os.WriteFile(p, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runOwnCLI(t, "", nil, "--dry-run", "--image=own", "-n", "prod", "--prove-fix", "--fix-out", filepath.Join(t.TempDir(), "f.yaml"), "--lb-profile", "gcp-nlb", p)
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	if !strings.Contains(out, "Stand-in for deployment/prod/netexec") || !strings.Contains(out, "Doctor's prediction with the fixes:") {
		t.Errorf("output:\n%s", out)
	}
}

// On an existing cluster the disruptions that add and remove pools are
// left out, with the reason.
func TestOwnExistingLeavesPoolsOut(t *testing.T) {
	code, out, errOut := runOwnCLI(t, "", nil, "--dry-run", "--provider", "existing", "--lb-profile", "gcp-nlb", "testdata/netexec.yaml")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"drain-pool-with-pdb: left out: it adds or removes nodes", "nodepool-replacement: left out"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "  drain-node ") {
		t.Errorf("drain-node missing:\n%s", out)
	}
}

// A fix that adds an object (ZD024's budget) is written with the changed
// ones.
func TestOwnProveFixWritesAnAddedBudget(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fixed.yaml")
	code, out, errOut := runOwnCLI(t, "", nil, "--dry-run", "--prove-fix", "--fix-out", p, "--lb-profile", "aws-nlb", "testdata/netexec.yaml")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "ZD024 deployment/web/netexec: new PodDisruptionBudget netexec") {
		t.Errorf("output:\n%s", out)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "kind: PodDisruptionBudget") || !strings.Contains(string(b), "maxUnavailable: 1") {
		t.Errorf("fixed file lacks the budget:\n%s", b)
	}
}

// --prove-fix says which findings still predict drops once fixed, and
// why the doctor cannot fix them, with fixes made and without any.
func TestOwnProveFixSaysWhatItCannotFix(t *testing.T) {
	const in = `apiVersion: v1
kind: Service
metadata: {name: gw, namespace: web, annotations: {zerodrop.dev/lb-profile: gke-l4}}
spec: {type: LoadBalancer, selector: {app: gw}, ports: [{name: http, port: 80, targetPort: 8080}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: gw, namespace: web}
spec:
  replicas: 2
  strategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  selector: {matchLabels: {app: gw}}
  template:
    metadata: {labels: {app: gw}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports: [{containerPort: 8080}]
        lifecycle: {preStop: {sleep: {seconds: 5}}}
        readinessProbe: {httpGet: {path: /, port: 8080}, periodSeconds: 1}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: gw, namespace: web}
spec: {maxUnavailable: 1, unhealthyPodEvictionPolicy: AlwaysAllow, selector: {matchLabels: {app: gw}}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: gw-2, namespace: web}
spec: {minAvailable: 1, unhealthyPodEvictionPolicy: AlwaysAllow, selector: {matchLabels: {app: gw}}}
`
	const reason = "ZD021 poddisruptionbudget/web/gw-2 (gke-l4): no automatic fix: which of the overlapping PodDisruptionBudgets to keep"
	dir := t.TempDir()
	for _, c := range []struct {
		name, yaml string
		want       []string
	}{
		{"nothing else to fix", in, []string{"--prove-fix: the doctor has no fix it can make itself for these manifests.\nNot fixed: these still predict drops, and the doctor cannot write their fix:\n  - " + reason}},
		{"beside a fix", strings.Replace(in, "        readinessProbe: {httpGet: {path: /, port: 8080}, periodSeconds: 1}\n", "", 1),
			[]string{"ZD030 deployment/web/gw: container nginx: readinessProbe tcpSocket port 8080", "Not fixed: these still predict drops", "  - " + reason,
				"Doctor's prediction with the fixes:", "drain-node drops (ZD021)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".yaml")
			if err := os.WriteFile(p, []byte(c.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runOwnCLI(t, "", nil, "--dry-run", "--prove-fix", "--fix-out", filepath.Join(dir, "fixed-"+filepath.Base(p)), p)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			for _, want := range c.want {
				if !containsSquashed(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"zerodrop.dev/zerodrop/fixtures"
)

func naiveReport(t *testing.T) *Report {
	t.Helper()
	return checkYAML(t, m{Lifecycle: "-", Grace: "-", PodExtra: "-", PDB: pdb("  maxUnavailable: 0\n")}.yaml(t))
}

func TestWriteText(t *testing.T) {
	r := naiveReport(t)
	var b bytes.Buffer
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"service/shop/web  LoadBalancer  externalTrafficPolicy=Local  lb=generic (10s x 3 = 30s; --lb-profile)",
		"workloads: deployment/shop/web",
		"ERROR   ZD002 prestop-shorter-than-lb-lag  test.yaml:",
		"[incident rolling-update-local, source-ip-dilemma]",
		"fix: ",
		"poddisruptionbudget/shop/web: PodDisruptionBudget web has maxUnavailable 0",
		"summary: 2 error(s), 1 warning(s), 1 info over 1 Service(s)",
		"Kubernetes not given: rules of the supported releases (1.28 and later)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	var empty bytes.Buffer
	if err := WriteText(&empty, Check(&Manifests{})); err != nil || !strings.Contains(empty.String(), "nothing to check") {
		t.Errorf("empty report: %v %q", err, empty.String())
	}
}

func TestWriteJSON(t *testing.T) {
	r := naiveReport(t)
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Version  int            `json:"version"`
		Findings []Finding      `json:"findings"`
		Summary  map[string]int `json:"summary"`
		Services []ServiceSummary
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("JSON output does not parse: %v\n%s", err, b.String())
	}
	if got.Version != JSONVersion || got.Summary["error"] != 2 || len(got.Findings) != len(r.Findings) {
		t.Errorf("json = %+v", got)
	}
	for i, f := range got.Findings {
		if f.Severity != r.Findings[i].Severity || f.RuleID != r.Findings[i].RuleID || f.Line != r.Findings[i].Line {
			t.Errorf("finding %d did not round-trip: %+v vs %+v", i, f, r.Findings[i])
		}
	}
	if !strings.Contains(b.String(), `"kubernetesVersion": "not given`) {
		t.Errorf("the Kubernetes version judged for is missing:\n%s", b.String())
	}
	if !strings.Contains(b.String(), `"severity": "error"`) {
		t.Errorf("severity should be written by name")
	}
}

func TestWriteSARIF(t *testing.T) {
	r := naiveReport(t)
	var b bytes.Buffer
	if err := WriteSARIF(&b, r); err != nil {
		t.Fatal(err)
	}
	var log struct {
		Schema  string `json:"$schema"`
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name  string `json:"name"`
					Rules []struct {
						ID                   string `json:"id"`
						DefaultConfiguration struct {
							Level string `json:"level"`
						} `json:"defaultConfiguration"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string `json:"ruleId"`
				RuleIndex int    `json:"ruleIndex"`
				Level     string `json:"level"`
				Message   struct {
					Text string `json:"text"`
				} `json:"message"`
				Locations []struct {
					PhysicalLocation *struct {
						ArtifactLocation struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region struct {
							StartLine int `json:"startLine"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b.Bytes(), &log); err != nil {
		t.Fatalf("SARIF does not parse: %v", err)
	}
	if log.Version != "2.1.0" || !strings.Contains(log.Schema, "sarif-2.1.0") || len(log.Runs) != 1 {
		t.Fatalf("not a SARIF 2.1.0 log: %+v", log)
	}
	run := log.Runs[0]
	if len(run.Tool.Driver.Rules) != len(Rules()) {
		t.Errorf("driver lists %d rules, want %d", len(run.Tool.Driver.Rules), len(Rules()))
	}
	if len(run.Results) != len(r.Findings) {
		t.Fatalf("%d results for %d findings", len(run.Results), len(r.Findings))
	}
	levels := map[string]string{}
	for i, res := range run.Results {
		if run.Tool.Driver.Rules[res.RuleIndex].ID != res.RuleID {
			t.Errorf("result %d: ruleIndex %d is %s, not %s", i, res.RuleIndex, run.Tool.Driver.Rules[res.RuleIndex].ID, res.RuleID)
		}
		pl := res.Locations[0].PhysicalLocation
		if pl == nil || pl.ArtifactLocation.URI != "test.yaml" || pl.Region.StartLine != r.Findings[i].Line || pl.Region.StartLine < 1 {
			t.Errorf("result %d location = %+v, want test.yaml:%d", i, pl, r.Findings[i].Line)
		}
		levels[res.RuleID] = res.Level
	}
	if levels["ZD002"] != "error" || levels["ZD010"] != "warning" {
		t.Errorf("levels = %v", levels)
	}
	if fileURI("/abs/x.yaml") != "file:///abs/x.yaml" || fileURI("./rel/x.yaml") != "rel/x.yaml" {
		t.Errorf("fileURI: %q %q", fileURI("/abs/x.yaml"), fileURI("./rel/x.yaml"))
	}
}

func TestSeverity(t *testing.T) {
	for _, s := range []Severity{SeverityNone, Info, Warning, Error} {
		got, err := ParseSeverity(s.String())
		if err != nil || got != s {
			t.Errorf("ParseSeverity(%q) = %v, %v", s.String(), got, err)
		}
	}
	if _, err := ParseSeverity("fatal"); err == nil {
		t.Error("ParseSeverity accepted fatal")
	}
	r := &Report{Findings: []Finding{{Severity: Warning}}}
	for _, tc := range []struct {
		threshold Severity
		want      bool
	}{{Error, false}, {Warning, true}, {Info, true}, {SeverityNone, false}} {
		if got := r.Failed(tc.threshold); got != tc.want {
			t.Errorf("Failed(%v) with a warning = %t, want %t", tc.threshold, got, tc.want)
		}
	}
}

// TestLoadCluster reads the fixture objects back from a (fake) API server and
// expects the same findings as from the rendered files, without lines.
func TestLoadCluster(t *testing.T) {
	w, err := fixtures.New(fixtures.WithHardening(fixtures.Naive), fixtures.WithPDB(fixtures.PDBBlocking), fixtures.WithNamespace("zd"))
	if err != nil {
		t.Fatal(err)
	}
	cs := fake.NewClientset([]runtime.Object{w.Service, w.Deployment, w.PDB}...)
	ms, err := LoadCluster(context.Background(), cs, "zd")
	if err != nil {
		t.Fatalf("LoadCluster: %v", err)
	}
	fromCluster := Check(ms)
	out, err := w.RenderYAML()
	if err != nil {
		t.Fatal(err)
	}
	fromFile := checkYAML(t, out)
	list := func(r *Report) string {
		var s []string
		for _, f := range r.Findings {
			s = append(s, f.RuleID+"/"+f.Severity.String()+"/"+f.Object)
		}
		sort.Strings(s)
		return strings.Join(s, " ")
	}
	if list(fromCluster) != list(fromFile) {
		t.Errorf("cluster findings %s\n != file findings %s", list(fromCluster), list(fromFile))
	}
	for _, f := range fromCluster.Findings {
		if f.File != "" || f.Line != 0 || f.Location() != "cluster" {
			t.Errorf("cluster finding has a file location: %+v", f)
		}
	}
	empty, err := LoadCluster(context.Background(), cs, "elsewhere")
	if err != nil || len(empty.Objects) != 0 {
		t.Errorf("other namespace: %v objects, err %v", len(empty.Objects), err)
	}
}

// TestLoadClusterPodTargets: from a live cluster as from files, a Service
// an ALB Ingress with IP targets exposes is judged on aws-alb-ip, and its
// Namespace's injection label counts as the readiness gate.
func TestLoadClusterPodTargets(t *testing.T) {
	ns := "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n  labels:\n    elbv2.k8s.aws/pod-readiness-gate-inject: enabled\n---\n"
	doc := m{SvcType: "ClusterIP", Policy: "Cluster", MinReady: "-", Extra: ns + ingressWith("alb.ingress.kubernetes.io/target-type: ip", "alb")}.yaml(t)
	ms, err := Read("test.yaml", bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	var objs []runtime.Object
	for _, o := range ms.Objects {
		if ro, ok := o.Obj.(runtime.Object); ok {
			objs = append(objs, ro)
		}
	}
	live, err := LoadCluster(context.Background(), fake.NewClientset(objs...), "shop")
	if err != nil {
		t.Fatalf("LoadCluster: %v", err)
	}
	r := Check(live)
	if len(r.Services) != 1 || r.Services[0].Profile != "aws-alb-ip" {
		t.Fatalf("services %+v, want one judged on aws-alb-ip", r.Services)
	}
	if _, fired := bySeverity(r)["ZD033"]; fired {
		t.Errorf("ZD033 fired: the namespace's label injects the gate")
	}
}

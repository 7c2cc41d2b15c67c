package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The nightly workflow cannot run here; this keeps it parseable and keeps
// the wiring the reports depend on (make e2e, zerodrop report, the job
// summary, the HTML artifact, cloud jobs only with credentials).
type workflow struct {
	Name string         `json:"name"`
	On   map[string]any `json:"on"`
	Jobs map[string]struct {
		Name     string            `json:"name"`
		If       string            `json:"if"`
		Needs    any               `json:"needs"`
		RunsOn   string            `json:"runs-on"`
		Env      map[string]string `json:"env"`
		Strategy struct {
			Matrix map[string]any `json:"matrix"`
		} `json:"strategy"`
		Steps []struct {
			Name string            `json:"name"`
			If   string            `json:"if"`
			Uses string            `json:"uses"`
			Run  string            `json:"run"`
			With map[string]string `json:"with"`
			Env  map[string]string `json:"env"`
		} `json:"steps"`
	} `json:"jobs"`
}

func TestNightlyWorkflow(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", ".github", "workflows", "nightly.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf workflow
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatalf("nightly.yml does not parse: %v", err)
	}
	if _, ok := wf.On["schedule"]; !ok {
		t.Errorf("no schedule trigger")
	}
	if _, ok := wf.On["workflow_dispatch"]; !ok {
		t.Errorf("no manual trigger")
	}
	kind, ok := wf.Jobs["kind"]
	if !ok {
		t.Fatal("no kind job")
	}
	def := defaultKubernetesVersion(t)
	if k8s, _ := kind.Strategy.Matrix["k8s"].(string); !strings.Contains(k8s, `"`+def+`"`) || !strings.Contains(k8s, "inputs.kubernetes_versions") {
		t.Errorf("kind matrix k8s = %v: want the input list defaulting to %s (clusters/images/versions.sh) and others", kind.Strategy.Matrix["k8s"], def)
	}
	if lb, _ := kind.Strategy.Matrix["lb"].([]any); len(lb) == 0 || lb[0] != "all" {
		t.Errorf("kind matrix lb = %v, want all (every LB model)", kind.Strategy.Matrix["lb"])
	}
	all := func(job string) string {
		var b strings.Builder
		for _, s := range wf.Jobs[job].Steps {
			b.WriteString(s.Uses + "\n" + s.Run + "\n")
			for k, v := range s.With {
				b.WriteString(k + ": " + v + "\n")
			}
		}
		return b.String()
	}
	for _, job := range []string{"kind", "cloud"} {
		text := all(job)
		for _, want := range []string{"make e2e PROVIDER=", "bin/zerodrop report", "summary.md >> \"$GITHUB_STEP_SUMMARY\"",
			"actions/upload-artifact@v4", "out/e2e/report.html"} {
			if !strings.Contains(text, want) {
				t.Errorf("job %s lacks %q", job, want)
			}
		}
		// The report must be written even when scenarios fail.
		for _, s := range wf.Jobs[job].Steps {
			if strings.Contains(s.Run, "zerodrop report") && s.If != "always()" {
				t.Errorf("job %s: report step runs only on success (if: %q)", job, s.If)
			}
		}
	}
	if !strings.Contains(all("kind"), "make e2e PROVIDER=kind") {
		t.Errorf("kind job does not run make e2e PROVIDER=kind")
	}
	cloud := wf.Jobs["cloud"]
	if !strings.Contains(cloud.If, "needs.cloud-gate.outputs.providers") {
		t.Errorf("cloud job is not gated on configured credentials: if %q", cloud.If)
	}
	gate := wf.Jobs["cloud-gate"]
	secrets := 0
	for _, s := range gate.Steps {
		for _, v := range s.Env {
			if strings.Contains(v, "secrets.") {
				secrets++
			}
		}
	}
	if secrets == 0 {
		t.Errorf("cloud-gate reads no secrets")
	}
	if !strings.Contains(all("matrix"), "zerodrop report") {
		t.Errorf("matrix job does not merge the runs")
	}
	for name, job := range wf.Jobs {
		if job.RunsOn == "" {
			t.Errorf("job %s has no runs-on", name)
		}
		for _, s := range job.Steps {
			if s.Uses != "" && !strings.Contains(s.Uses, "@v") {
				t.Errorf("job %s uses %s without a version", name, s.Uses)
			}
		}
	}
}

// defaultKubernetesVersion reads the one line that names the default
// Kubernetes version (clusters/images/versions.sh).
func defaultKubernetesVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../clusters/images/versions.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "KUBERNETES_DEFAULT_VERSION="); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("clusters/images/versions.sh names no KUBERNETES_DEFAULT_VERSION")
	return ""
}

package v1_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/verdict"
	"zerodrop.dev/zerodrop/reports/render/rendertest"
)

func compile(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(zdv1.ReportSchemaV1))
	if err != nil {
		t.Fatalf("report.v1.json is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat() // date-time must be a real RFC 3339 time
	if err := c.AddResource(zdv1.ReportSchemaV1ID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(zdv1.ReportSchemaV1ID)
	if err != nil {
		t.Fatalf("report.v1.json is not a valid draft 2020-12 schema: %v", err)
	}
	return s
}

func validate(t *testing.T, s *jsonschema.Schema, data []byte) error {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("instance is not JSON: %v", err)
	}
	return s.Validate(inst)
}

// suiteRun writes a realistic suite run and returns its directory and the
// run files in it.
func suiteRun(t *testing.T) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	rep := rendertest.WriteRun(t, dir, rendertest.Env{Provider: "kind", Kubernetes: "v1.34.2", LB: "metallb"}, rendertest.Standard())
	var files []string
	for _, sc := range rep.Scenarios {
		files = append(files, filepath.Join(dir, sc.RunFile))
	}
	return dir, files
}

func TestSchemaAcceptsReports(t *testing.T) {
	s := compile(t)
	dir, files := suiteRun(t)

	// The report the real analysis writes from the run files.
	rep, err := verdict.BuildReport(context.Background(), zdv1.RunMeta{ToolVersion: "test", Provider: "kind",
		KubernetesVersion: "v1.34.2", LBImplementation: "metallb"}, files)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.json")
	if err := rep.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	analyzed, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The synthetic report written next to the run files.
	synthetic, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Edge cases: an empty report, and one scenario with every optional
	// field unset (nil slices and maps marshal as null).
	emptyRep := zdv1.New(zdv1.RunMeta{Provider: "none"})
	emptyRep.Summarize()
	empty, _ := json.Marshal(emptyRep)
	bare := zdv1.New(zdv1.RunMeta{Provider: "none"})
	bare.Scenarios = append(bare.Scenarios, zdv1.Scenario{ScenarioSpec: zdv1.ScenarioSpec{Name: "x", Role: zdv1.RoleDocumentation},
		Verdict: zdv1.Verdict{Status: zdv1.Error}})
	bare.Summarize()
	bareJSON, _ := json.Marshal(bare)
	// A run whose load generator stalled: the delivery block in full.
	stalled := zdv1.New(zdv1.RunMeta{Provider: "none"})
	when := time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)
	stalled.Scenarios = append(stalled.Scenarios, zdv1.Scenario{ScenarioSpec: zdv1.ScenarioSpec{Name: "s", Role: zdv1.RoleAssertion},
		Results: zdv1.Results{Retried: 2, Delivery: &zdv1.Delivery{RequestedRate: 500, Seconds: 3, MinSecondRate: 90,
			ShortSeconds: []zdv1.DeliverySecond{{Start: when, Sent: 90}}, ShortSecondsTotal: 1, Unsent: 410, Late: 3, MaxLagMs: 140, LagBoundMs: 50,
			Stalls: []zdv1.Stall{{Start: when, End: when.Add(815 * time.Millisecond), DurationMs: 815, Unsent: 410, Late: 3, MaxLagMs: 140,
				Reason: "the load generator was 815ms behind its schedule (bound 50ms)"}}}},
		Verdict: zdv1.Verdict{Status: zdv1.Error}})
	stalled.Summarize()
	stalledJSON, _ := json.Marshal(stalled)
	// A scenario measured again after that stall: the stalled run kept.
	again := zdv1.New(zdv1.RunMeta{Provider: "none"})
	first := stalled.Scenarios[0]
	first.RunFile, first.RunFileSHA256 = "s/attempt-1/run.jsonl", strings.Repeat("ab", 32)
	again.Scenarios = append(again.Scenarios, zdv1.Scenario{ScenarioSpec: first.ScenarioSpec, Verdict: zdv1.Verdict{Status: zdv1.Pass},
		Remeasured: []zdv1.Remeasure{first.AsRemeasure()}})
	again.Summarize()
	againJSON, _ := json.Marshal(again)

	// A vendor's report: the implementation block and scenario set.
	vendor := zdv1.New(zdv1.RunMeta{Provider: "kind", KubernetesVersion: "v1.34.2"})
	vendor.Implementation = &zdv1.Implementation{Organization: "Example Inc.", Project: "example-lb", URL: "https://example.com/lb",
		Version: "v2.1.0", Contact: []string{"@example/lb"}, LoadBalancer: "example-lb", LoadBalancerVersion: "v2.1.0",
		Platform: "kind", PlatformVersion: "v0.30.0"}
	vendor.ScenarioSet = &zdv1.ScenarioSet{Name: zdv1.ScenarioSetE2E, Version: "1"}
	vendor.Scenarios = bare.Scenarios
	vendor.Summarize()
	vendorJSON, _ := json.Marshal(vendor)

	for name, data := range map[string][]byte{"analyzed": analyzed, "synthetic": synthetic, "empty": empty, "bare": bareJSON, "stalled": stalledJSON, "remeasured": againJSON, "vendor": vendorJSON} {
		if err := validate(t, s, data); err != nil {
			t.Errorf("%s report does not validate: %v", name, err)
		}
	}
}

// TestSyntheticRunsAgreeWithAnalysis keeps rendertest honest: the figures
// it writes into report.json are the ones harness/verdict computes from the
// same run files.
func TestSyntheticRunsAgreeWithAnalysis(t *testing.T) {
	dir, files := suiteRun(t)
	synth, err := zdv1.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		sc, err := verdict.AnalyzeFile(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		want := synth.Scenarios[i]
		got := sc.Results
		if got.Total != want.Results.Total || got.OK != want.Results.OK || got.Dropped != want.Results.Dropped ||
			got.Errors != want.Results.Errors || got.Non2xx != want.Results.Non2xx {
			t.Errorf("%s: analysis total/ok/dropped/errors/non2xx = %d/%d/%d/%d/%d, synthetic %d/%d/%d/%d/%d", want.Name,
				got.Total, got.OK, got.Dropped, got.Errors, got.Non2xx,
				want.Results.Total, want.Results.OK, want.Results.Dropped, want.Results.Errors, want.Results.Non2xx)
		}
		if len(sc.FailureWindows) != len(want.FailureWindows) {
			t.Errorf("%s: analysis found %d failure windows, synthetic %d", want.Name, len(sc.FailureWindows), len(want.FailureWindows))
		}
		if sc.Verdict.Status != want.Verdict.Status {
			t.Errorf("%s: analysis verdict %s, synthetic %s", want.Name, sc.Verdict.Status, want.Verdict.Status)
		}
	}
}

func TestSchemaRejects(t *testing.T) {
	s := compile(t)
	_, files := suiteRun(t)
	rep, err := verdict.BuildReport(context.Background(), zdv1.RunMeta{ToolVersion: "test", Provider: "kind"}, files)
	if err != nil {
		t.Fatal(err)
	}
	good, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(fn func(m map[string]any)) []byte {
		var m map[string]any
		if err := json.Unmarshal(good, &m); err != nil {
			t.Fatal(err)
		}
		fn(m)
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	scenario0 := func(m map[string]any) map[string]any { return m["scenarios"].([]any)[0].(map[string]any) }
	tests := []struct {
		name  string
		data  []byte
		where string // part of the error location
	}{
		{"missing schemaVersion", mutate(func(m map[string]any) { delete(m, "schemaVersion") }), "schemaVersion"},
		{"other schemaVersion", mutate(func(m map[string]any) { m["schemaVersion"] = "zerodrop.dev/report/v2" }), "/schemaVersion"},
		{"bad verdict status", mutate(func(m map[string]any) {
			scenario0(m)["verdict"].(map[string]any)["status"] = "MAYBE"
		}), "/scenarios/0/verdict/status"},
		{"bad summary status", mutate(func(m map[string]any) { m["summary"].(map[string]any)["status"] = "pass" }), "/summary/status"},
		{"bad role", mutate(func(m map[string]any) { scenario0(m)["role"] = "optional" }), "/scenarios/0/role"},
		{"negative count", mutate(func(m map[string]any) {
			scenario0(m)["results"].(map[string]any)["dropped"] = -1
		}), "/scenarios/0/results/dropped"},
		{"bad time", mutate(func(m map[string]any) { m["run"].(map[string]any)["start"] = "yesterday" }), "/run/start"},
		{"missing results", mutate(func(m map[string]any) { delete(scenario0(m), "results") }), "results"},
		{"contact not a list", mutate(func(m map[string]any) {
			m["implementation"] = map[string]any{"contact": "@me"}
		}), "/implementation/contact"},
		{"scenario set without version", mutate(func(m map[string]any) {
			m["scenarioSet"] = map[string]any{"name": "zerodrop-e2e"}
		}), "/scenarioSet"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := validate(t, s, tc.data)
			if err == nil {
				t.Fatalf("schema accepted a report with %s", tc.name)
			}
			if !strings.Contains(err.Error(), tc.where) {
				t.Errorf("error does not point at %s: %v", tc.where, err)
			}
		})
	}
}

package v1

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	sc := func(role Role, st Status) Scenario {
		return Scenario{ScenarioSpec: ScenarioSpec{Name: "x", Role: role}, Verdict: Verdict{Status: st}}
	}
	tests := []struct {
		name string
		in   []Scenario
		want Summary
	}{
		{"empty proves nothing", nil, Summary{Status: Error}},
		{"all pass", []Scenario{sc(RoleAssertion, Pass), sc(RoleAssertion, Pass)}, Summary{Status: Pass, Scenarios: 2, Passed: 2}},
		{"fail wins over pass", []Scenario{sc(RoleAssertion, Pass), sc(RoleAssertion, Fail)}, Summary{Status: Fail, Scenarios: 2, Passed: 1, Failed: 1}},
		{"error wins over fail", []Scenario{sc(RoleAssertion, Error), sc(RoleAssertion, Fail)}, Summary{Status: Error, Scenarios: 2, Failed: 1, Errored: 1}},
		{"documentation never fails the suite", []Scenario{sc(RoleAssertion, Pass), sc(RoleDocumentation, Fail)}, Summary{Status: Pass, Scenarios: 2, Passed: 1, Documentation: 1}},
		{"a remeasured scenario counts by its last verdict", []Scenario{remeasured(sc(RoleAssertion, Pass)), sc(RoleAssertion, Pass)},
			Summary{Status: Pass, Scenarios: 2, Passed: 2, Remeasured: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := New(RunMeta{})
			r.Scenarios = tc.in
			r.Summarize()
			if r.Summary.Submission != r.SubmissionSummary() {
				t.Errorf("Submission %q is not the report's summary", r.Summary.Submission)
			}
			r.Summary.Submission = "" // tested in TestSubmissionSummary
			if r.Summary != tc.want {
				t.Errorf("Summary = %+v, want %+v", r.Summary, tc.want)
			}
		})
	}
}

func remeasured(sc Scenario) Scenario {
	sc.Remeasured = []Remeasure{{Verdict: Verdict{Status: Error, Reasons: []Reason{{Check: CheckLoad, Status: Error}}}}}
	return sc
}

func TestWriteReadValidate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.json")
	r := New(RunMeta{ToolVersion: "dev", Provider: "none", Start: time.Unix(1, 0).UTC(), End: time.Unix(2, 0).UTC()})
	r.Scenarios = append(r.Scenarios, Scenario{
		ScenarioSpec: ScenarioSpec{Name: "load", Role: RoleAssertion, Criteria: Criteria{MaxDropped: Int64(0)}},
		Verdict:      Verdict{Status: Pass, Reasons: []Reason{{Check: "dropped", Status: Pass, Observed: Float64(0), Limit: Float64(0)}}},
	})
	r.Summarize()
	if err := r.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	for _, want := range []string{`"schemaVersion": "zerodrop.dev/report/v1"`, `"name": "load"`, `"role": "assertion"`, `"maxDropped": 0`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("report.json lacks %s:\n%s", want, data)
		}
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Summary.Status != Pass || got.Scenarios[0].Name != "load" || *got.Scenarios[0].Criteria.MaxDropped != 0 {
		t.Errorf("read back %+v", got)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("report.json mode = %v, %v; want 0644", st.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("WriteFile left %d files behind, want only report.json", len(entries))
	}

	bad := []struct {
		name   string
		mutate func(*Report)
		want   string
	}{
		{"version", func(r *Report) { r.SchemaVersion = "v0" }, "schemaVersion"},
		{"role", func(r *Report) { r.Scenarios[0].Role = "x" }, "role"},
		{"status", func(r *Report) { r.Scenarios[0].Verdict.Status = "" }, "verdict status"},
		{"name", func(r *Report) { r.Scenarios[0].Name = "" }, "no name"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			c := *got
			c.Scenarios = append([]Scenario(nil), got.Scenarios...)
			tc.mutate(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want error about %s", err, tc.want)
			}
		})
	}
}

func TestWriteFileBadDir(t *testing.T) {
	r := New(RunMeta{})
	if err := r.WriteFile(filepath.Join(t.TempDir(), "missing", "report.json")); err == nil {
		t.Fatal("WriteFile into a missing directory succeeded")
	}
}

func TestOutcome(t *testing.T) {
	sc := func(role Role, st Status, dropped int64) *Scenario {
		return &Scenario{ScenarioSpec: ScenarioSpec{Role: role}, Verdict: Verdict{Status: st}, Results: Results{Dropped: dropped}}
	}
	tests := []struct {
		name string
		sc   *Scenario
		want string
	}{
		{"assertion pass", sc(RoleAssertion, Pass, 0), "PASS"},
		{"assertion fail", sc(RoleAssertion, Fail, 3), "FAIL"},
		{"assertion error", sc(RoleAssertion, Error, 0), "ERROR"},
		{"documentation that dropped (no drop limit, so PASS)", sc(RoleDocumentation, Pass, 75), OutcomeHazardReproduced},
		{"documentation whose criterion failed", sc(RoleDocumentation, Fail, 0), OutcomeHazardReproduced},
		{"documentation with nothing measured wrong", sc(RoleDocumentation, Pass, 0), OutcomeHazardNotReproduced},
		{"documentation whose run broke", withReasons(sc(RoleDocumentation, Error, 75), Reason{Check: "run", Status: Error}), "ERROR"},
		{"documentation with an unmeasured span that still dropped", withReasons(sc(RoleDocumentation, Error, 638),
			Reason{Check: "run", Status: Pass}, Reason{Check: CheckLoad, Status: Error}), OutcomeHazardReproduced},
		{"documentation with an unmeasured span and nothing seen", withReasons(sc(RoleDocumentation, Error, 0),
			Reason{Check: CheckLoad, Status: Error}), "ERROR"},
		{"documentation with an unmeasured span and a failed criterion", withReasons(sc(RoleDocumentation, Error, 0),
			Reason{Check: CheckLoad, Status: Error}, Reason{Check: "pods-served", Status: Fail}), OutcomeHazardReproduced},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.sc.Outcome(); got != tc.want {
				t.Errorf("Outcome() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestLoadSpoiled: only a run whose single problem is the load generator's
// may be measured again; any failure it saw stands.
func TestLoadSpoiled(t *testing.T) {
	sc := func(role Role, st Status, dropped int64, rs ...Reason) *Scenario {
		return &Scenario{ScenarioSpec: ScenarioSpec{Role: role}, Verdict: Verdict{Status: st, Reasons: rs}, Results: Results{Dropped: dropped}}
	}
	load := Reason{Check: CheckLoad, Status: Error}
	for _, tc := range []struct {
		name string
		sc   *Scenario
		want bool
	}{
		{"assertion, load alone", sc(RoleAssertion, Error, 0, Reason{Check: "dropped", Status: Pass}, load), true},
		{"assertion that passed", sc(RoleAssertion, Pass, 0, Reason{Check: CheckLoad, Status: Pass}), false},
		{"assertion that dropped within its limit and lagged", sc(RoleAssertion, Error, 1, Reason{Check: "dropped", Status: Pass}, load), false},
		{"assertion that dropped and lagged", sc(RoleAssertion, Error, 2, Reason{Check: "dropped", Status: Fail}, load), false},
		{"assertion with a failed criterion and a lag", sc(RoleAssertion, Error, 0, Reason{Check: "pods-served", Status: Fail}, load), false},
		{"assertion whose run broke", sc(RoleAssertion, Error, 0, Reason{Check: "run", Status: Error}), false},
		{"assertion whose run broke and lagged", sc(RoleAssertion, Error, 0, Reason{Check: "run", Status: Error}, load), false},
		{"an ERROR without reasons", sc(RoleAssertion, Error, 0), false},
		{"documentation, load alone, nothing seen", sc(RoleDocumentation, Error, 0, load), true},
		{"documentation that saw its hazard and lagged", sc(RoleDocumentation, Error, 40, load), false},
		{"documentation that failed a criterion and lagged", sc(RoleDocumentation, Error, 0, Reason{Check: "pods-served", Status: Fail}, load), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.sc.LoadSpoiled(); got != tc.want {
				t.Errorf("LoadSpoiled() = %v, want %v", got, tc.want)
			}
		})
	}
}

func withReasons(sc *Scenario, rs ...Reason) *Scenario {
	sc.Verdict.Reasons = rs
	return sc
}

func TestOutcomeTextSaysWhatHappened(t *testing.T) {
	doc := func(dropped int64, status Status, exp *Expectation, reasons ...Reason) *Scenario {
		return &Scenario{ScenarioSpec: ScenarioSpec{Name: "x", Role: RoleDocumentation, Expected: exp, Labels: map[string]string{"lb": "gke-legacy"}},
			Results: Results{Total: 1000, Dropped: dropped}, Verdict: Verdict{Status: status, Reasons: reasons},
			FailureWindows: make([]FailureWindow, min(dropped, 2))}
	}
	prevented := &Expectation{Outcome: OutcomeHazardNotReproduced, Why: "the LB keeps cordoned nodes"}
	expected := &Expectation{Outcome: OutcomeHazardReproduced, Why: "requests dropped"}
	for _, tc := range []struct {
		name       string
		sc         *Scenario
		want       string
		unexpected bool
	}{
		{"reproduced as expected", doc(42, Fail, expected, Reason{Check: "dropped", Status: Fail, Message: "42 dropped"}),
			"hazard reproduced on gke-legacy: 42 of 1000 requests dropped in 2 failure window(s)", false},
		{"reproduced without drops", doc(0, Fail, expected, Reason{Check: "served-after-removal", Status: Fail, Message: "pod p served 2662 requests after its endpoint was removed"}),
			"hazard reproduced on gke-legacy: pod p served 2662 requests after its endpoint was removed", false},
		{"prevented as expected", doc(0, Pass, prevented), "hazard not reproduced on gke-legacy: the LB keeps cordoned nodes", false},
		{"appeared unexpectedly", doc(3, Fail, prevented), "hazard reproduced on gke-legacy (UNEXPECTED: expected hazard not reproduced): 3 of 1000", true},
		{"disappeared unexpectedly", doc(0, Pass, expected), "hazard not reproduced on gke-legacy (UNEXPECTED: expected hazard reproduced): 0 of 1000 requests dropped", true},
		{"either", doc(0, Pass, &Expectation{Why: "depends on the VIP hash"}), "hazard not reproduced on gke-legacy: 0 of 1000 requests dropped and every criterion held this time (depends on the VIP hash)", false},
		{"broken run", doc(0, Error, expected, Reason{Check: "run", Status: Error, Message: "rollout timed out"}), "ERROR: rollout timed out", false},
		{"assertion", &Scenario{ScenarioSpec: ScenarioSpec{Role: RoleAssertion}, Results: Results{Total: 5}, Verdict: Verdict{Status: Pass}},
			"PASS: 5 requests, every criterion held", false},
	} {
		got := tc.sc.OutcomeText()
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want it to start with %q", tc.name, got, tc.want)
		}
		if tc.sc.Unexpected() != tc.unexpected {
			t.Errorf("%s: unexpected = %v", tc.name, !tc.unexpected)
		}
	}
}

func TestProcessPauseString(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		p    ProcessPause
		want string
	}{
		{ProcessPause{LateMs: 72, Cause: "cpu", RunDelayMs: f(94), ExecMs: f(3)}, "ran 72 ms late: its threads waited 94 ms for a CPU that other processes held"},
		{ProcessPause{LateMs: 72, Cause: "cpu"}, "waited for a CPU that other processes held"},
		{ProcessPause{LateMs: 72, Cause: "busy", RunDelayMs: f(80), ExecMs: f(120)}, "its threads ran 120 ms and waited 80 ms for a CPU (the test process itself was busy)"},
		{ProcessPause{LateMs: 72, Cause: "gc", GCSTWMs: 65}, "garbage collector stopped it for up to 65 ms"},
		{ProcessPause{LateMs: 72, Cause: "unexplained", RunDelayMs: f(4), GCCycles: 1, StealMs: f(0)}, "neither waiting for a CPU (4 ms) nor stopped by Go's garbage collector (0 ms, 1 cycles) nor by steal (0 ms): not accounted for"},
		{ProcessPause{LateMs: 72, Cause: "steal", StealMs: f(60)}, "the hypervisor gave 60 ms of this machine's CPU time to others"},
		{ProcessPause{LateMs: 72, Cause: "irq", RunDelayMs: f(150)}, "its threads waited 150 ms for a CPU while the kernel served interrupts"},
		{ProcessPause{LateMs: 79, Cause: "cpu", RunDelayMs: f(175), Machine: &MachineCPU{TasksMs: 150, SystemMs: 90, IRQMs: 10, IdleMs: 0, StealMs: 0}},
			"waited 175 ms for a CPU that other processes held (the machine's CPUs meanwhile, summed over them: tasks 150 ms of which the kernel 90 ms, interrupts 10 ms, idle 0 ms, stolen 0 ms)"},
	} {
		if got := tc.p.String(); !strings.Contains(got, tc.want) {
			t.Errorf("%+v: %q lacks %q", tc.p, got, tc.want)
		}
	}
}

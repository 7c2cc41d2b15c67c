package render

import (
	"strings"
	"testing"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

func TestRunHeading(t *testing.T) {
	load := func(targets ...string) *Scenario {
		return &Scenario{Scenario: zdv1.Scenario{Load: zdv1.LoadSettings{Targets: targets}}}
	}
	tests := []struct {
		name string
		meta zdv1.RunMeta
		scs  []*Scenario
		want string
	}{
		{"cluster run names its environment", zdv1.RunMeta{Provider: "kind", KubernetesVersion: "v1.34.2", LBImplementation: "metallb"},
			[]*Scenario{load("http://10.0.0.1/")}, "kind · v1.34.2 · metallb"},
		{"loopback run names its target, not none", zdv1.RunMeta{Provider: "none"},
			[]*Scenario{load("http://127.0.0.1:8080/"), load("http://127.0.0.1:8080/")}, "load of http://127.0.0.1:8080/"},
		{"many targets", zdv1.RunMeta{Provider: "none"},
			[]*Scenario{load("http://a/", "http://b/", "http://c/", "http://d/", "http://e/")}, "load of http://a/, http://b/, http://c/ and 2 more targets"},
		{"no target recorded", zdv1.RunMeta{Provider: "none"}, nil, "load without a cluster (provider none)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &Run{Report: &zdv1.Report{Run: tc.meta}, Scenarios: tc.scs}
			if got := r.Heading(); got != tc.want {
				t.Errorf("Heading() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestReasonSummaries(t *testing.T) {
	long := "dropped 51 of 1000 requests (errors 51 [timeout 51], non-2xx 0) in 1 failure window(s); window 0 ...: 51 failed; at most 0 allowed"
	tests := []struct {
		name                 string
		sc                   zdv1.Scenario
		why, checks, ownHead string
	}{
		{
			name: "failed assertion: main clause, figures, no headline of its own",
			sc: zdv1.Scenario{ScenarioSpec: zdv1.ScenarioSpec{Role: zdv1.RoleAssertion}, Verdict: zdv1.Verdict{Status: zdv1.Fail, Reasons: []zdv1.Reason{
				{Check: "run", Status: zdv1.Pass, Message: "run complete"},
				{Check: "dropped", Status: zdv1.Fail, Message: long, Observed: zdv1.Float64(51), Limit: zdv1.Float64(0)},
				{Check: "load", Status: zdv1.Error, Message: "312 ms behind schedule; details"},
			}}},
			why:    "dropped 51 of 1000 requests (errors 51 [timeout 51], non-2xx 0) in 1 failure window(s)",
			checks: "dropped 51 (limit 0), load ERROR",
		},
		{
			name: "documentation hazard keeps its own headline",
			sc: zdv1.Scenario{ScenarioSpec: zdv1.ScenarioSpec{Role: zdv1.RoleDocumentation},
				Results:        zdv1.Results{Total: 100, Dropped: 3},
				FailureWindows: []zdv1.FailureWindow{{}},
				Verdict:        zdv1.Verdict{Status: zdv1.Pass, Reasons: []zdv1.Reason{{Check: "run", Status: zdv1.Pass, Message: "run complete"}}}},
			why:     "documented hazard: 3 of 100 requests dropped in 1 failure window(s)",
			ownHead: "documented hazard: 3 of 100 requests dropped in 1 failure window(s)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := &Scenario{Scenario: tc.sc}
			if got := sc.why(); got != tc.why {
				t.Errorf("why() = %q, want %q", got, tc.why)
			}
			if got := sc.failedChecks(); got != tc.checks {
				t.Errorf("failedChecks() = %q, want %q", got, tc.checks)
			}
			if got := sc.ownHeadline(); got != tc.ownHead {
				t.Errorf("ownHeadline() = %q, want %q", got, tc.ownHead)
			}
		})
	}
}

func TestColumnString(t *testing.T) {
	for _, tc := range []struct {
		c    Column
		want string
	}{
		{Column{Provider: "kind", Kubernetes: "v1.34.2", LB: "metallb"}, "kind · v1.34.2 · metallb"},
		{Column{Provider: "none"}, "no cluster"},
		{Column{}, "unknown environment"},
	} {
		if got := tc.c.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.c, got, tc.want)
		}
	}
}

// A documentation cell always says what happened, and a surprise is flagged
// in its badge.
func TestDocumentationHeadlineSaysWhatHappened(t *testing.T) {
	prevented := &zdv1.Expectation{Outcome: zdv1.OutcomeHazardNotReproduced, Why: "the LB keeps cordoned nodes as backends"}
	sc := &Scenario{Scenario: zdv1.Scenario{
		ScenarioSpec: zdv1.ScenarioSpec{Role: zdv1.RoleDocumentation, Expected: prevented, Labels: map[string]string{"lb": "gcp-nlb"}},
		Results:      zdv1.Results{Total: 3000},
		Verdict:      zdv1.Verdict{Status: zdv1.Pass, Reasons: []zdv1.Reason{{Check: "dropped", Status: zdv1.Pass, Message: "0 of 3000 dropped"}}},
	}}
	if got := sc.headline(); got != "hazard not reproduced on gcp-nlb: the LB keeps cordoned nodes as backends" {
		t.Errorf("headline %q", got)
	}
	if b := sc.Badge(); strings.Contains(b.Text, "UNEXPECTED") {
		t.Errorf("expected outcome flagged: %+v", b)
	}
	sc.Results.Dropped, sc.Verdict.Status = 12, zdv1.Fail
	sc.Verdict.Reasons[0] = zdv1.Reason{Check: "dropped", Status: zdv1.Fail, Message: "12 of 3000 dropped"}
	if b := sc.Badge(); !strings.Contains(b.Text, "UNEXPECTED") || b.Class != "doc-error" {
		t.Errorf("a hazard where a mechanism should prevent it is not flagged: %+v", b)
	}
	if got := sc.headline(); !strings.HasPrefix(got, "hazard reproduced on gcp-nlb (UNEXPECTED") {
		t.Errorf("headline %q", got)
	}
}

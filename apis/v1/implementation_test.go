package v1

import (
	"strings"
	"testing"
	"time"
)

func TestSubmissionSummary(t *testing.T) {
	start := time.Date(2026, 11, 23, 11, 0, 0, 0, time.UTC)
	pass := Scenario{ScenarioSpec: ScenarioSpec{Name: "a", Role: RoleAssertion}, Verdict: Verdict{Status: Pass}}
	fail := Scenario{ScenarioSpec: ScenarioSpec{Name: "b", Role: RoleAssertion}, Verdict: Verdict{Status: Fail}}
	doc := Scenario{ScenarioSpec: ScenarioSpec{Name: "c", Role: RoleDocumentation}, Verdict: Verdict{Status: Fail}}
	tests := []struct {
		name string
		rep  Report
		want string
	}{
		{
			name: "a vendor's suite run",
			rep: Report{Run: RunMeta{ToolVersion: "v0.3.0", Provider: "kind", KubernetesVersion: "v1.34.2", LBImplementation: "metallb",
				Start: start, End: start.Add(20 * time.Minute)},
				Implementation: &Implementation{Organization: "Example Inc.", Project: "example-lb", Version: "v2.1.0",
					Contact: []string{"@example/lb-team"}, LoadBalancerVersion: "v0.14.9"},
				ScenarioSet: &ScenarioSet{Name: ScenarioSetE2E, Version: "1"},
				Scenarios:   []Scenario{pass, fail, doc}},
			want: "zerodrop FAIL: example-lb v2.1.0 (Example Inc.), load balancer metallb v0.14.9, on kind, Kubernetes v1.34.2. " +
				"Scenario set zerodrop-e2e 1: 1 of 2 assertion scenario(s) passed, 1 failed, 0 errored; 1 documentation scenario(s) measured known hazards. " +
				"Run 2026-11-23 11:00:00 to 11:20:00 UTC with zerodrop v0.3.0. Contact: @example/lb-team.",
		},
		{
			name: "nobody said what was tested",
			rep:  Report{Run: RunMeta{Provider: "none"}, Scenarios: []Scenario{pass}},
			want: "zerodrop PASS: an unnamed implementation, on none. Scenario set not named: 1 of 1 assertion scenario(s) passed, 0 failed, 0 errored; 0 documentation scenario(s) measured known hazards.",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.rep
			r.Summarize()
			if r.Summary.Submission != tc.want {
				t.Errorf("submission\n got %q\nwant %q", r.Summary.Submission, tc.want)
			}
		})
	}
}

func TestImplementationValidateAndMerge(t *testing.T) {
	tests := []struct {
		name    string
		impl    Implementation
		wantErr string
	}{
		{"empty is fine", Implementation{}, ""},
		{"full", Implementation{Organization: "o", Project: "p", URL: "https://example.com/p", Version: "1", Contact: []string{"@o"}}, ""},
		{"url without scheme", Implementation{URL: "example.com"}, "want an http or https URL"},
		{"blank contact", Implementation{Contact: []string{"@o", " "}}, "blank"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.impl.Validate()
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("Validate() = %v, want %q", err, tc.wantErr)
			}
			r := New(RunMeta{})
			r.Implementation = &tc.impl
			if err := r.Validate(); (err == nil) != (tc.wantErr == "") {
				t.Errorf("Report.Validate() = %v, want error %v", err, tc.wantErr != "")
			}
		})
	}
	i := Implementation{Organization: "old", Project: "p", Contact: []string{"@a"}}
	i.Merge(Implementation{Organization: "new", Version: "2", Contact: []string{"@b", "@c"}})
	if i.Organization != "new" || i.Project != "p" || i.Version != "2" || strings.Join(i.Contact, ",") != "@b,@c" {
		t.Errorf("Merge gave %+v", i)
	}
	if !(*Implementation)(nil).Empty() || !(&Implementation{}).Empty() || i.Empty() {
		t.Error("Empty() is wrong")
	}
}

package doctor

import (
	"slices"
	"strings"
	"testing"

	"zerodrop.dev/zerodrop/harness/incident"
)

// Every rule that warns of drops says which disruptions meet it, with
// triggers the scenarios know; the rules that only inform name none.
func TestRulesNameTheirTriggers(t *testing.T) {
	informs := []string{"ZD090", "ZD091", "ZD092"}
	for _, r := range Rules() {
		if slices.Contains(informs, r.ID) {
			if len(r.Triggers) != 0 {
				t.Errorf("%s informs but names triggers %v", r.ID, r.Triggers)
			}
			continue
		}
		if len(r.Triggers) == 0 {
			t.Errorf("%s (%s) names no trigger: no disruption would be predicted to meet it", r.ID, r.Name)
		}
		for _, tr := range r.Triggers {
			if !slices.Contains(incident.Triggers(), tr) {
				t.Errorf("%s: unknown trigger %q", r.ID, tr)
			}
		}
	}
}

func TestPredict(t *testing.T) {
	rep := &Report{Findings: []Finding{
		{RuleID: "ZD002", Severity: Error, Service: "service/a/web"},
		{RuleID: "ZD022", Severity: Warning, Service: "service/a/web"},
		{RuleID: "ZD023", Severity: Info, Service: "service/a/web"},
		{RuleID: "ZD040", Severity: Warning, Service: "service/a/other"},
	}}
	for _, tc := range []struct {
		triggers []incident.Trigger
		want     Outcome
		rules    []string
	}{
		{[]incident.Trigger{incident.Rollout, incident.PodTermination}, PredictDrops, []string{"ZD002"}},
		{[]incident.Trigger{incident.Eviction}, PredictRisk, []string{"ZD022"}},
		{[]incident.Trigger{incident.Eviction, incident.PodTermination}, PredictDrops, []string{"ZD002", "ZD022"}},
		{[]incident.Trigger{incident.ReadinessFlip}, PredictClean, nil},
		{nil, PredictClean, nil},
	} {
		got := rep.Predict("service/a/web", tc.triggers)
		if got.Outcome != tc.want || !slices.Equal(got.Rules, tc.rules) {
			t.Errorf("Predict(%v) = %+v, want %s %v", tc.triggers, got, tc.want, tc.rules)
		}
	}
}

// An undecided rule's info is a risk for the disruptions it names and
// nothing for the others: whether clients reuse connections is not in the
// manifests.
func TestPredictUndecidedInfo(t *testing.T) {
	r := &Report{Findings: []Finding{{RuleID: "ZD041", Severity: Info, Service: "service/a/web"}, {RuleID: "ZD023", Severity: Info, Service: "service/a/web"}}}
	if p := r.Predict("service/a/web", []incident.Trigger{incident.ReadinessFlip}); p.Outcome != PredictRisk || strings.Join(p.Rules, ",") != "ZD041" {
		t.Errorf("readiness flip: %+v, want risk [ZD041]", p)
	}
	if p := r.Predict("service/a/web", []incident.Trigger{incident.Eviction, incident.PodTermination}); p.Outcome != PredictClean {
		t.Errorf("eviction: %+v, want no drops (ZD023's info predicts nothing)", p)
	}
}

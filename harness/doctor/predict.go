package doctor

import (
	"slices"

	"zerodrop.dev/zerodrop/harness/incident"
)

// Outcome is what the doctor predicts for one disruption.
type Outcome string

const (
	// PredictDrops: an error finding whose rule needs one of the
	// disruption's triggers.
	PredictDrops Outcome = "drops"
	// PredictRisk: only warnings (or an undecided rule's info): the
	// outcome depends on what the doctor cannot read (timing, the app, its
	// clients).
	PredictRisk Outcome = "risk"
	// PredictClean: no finding of the disruption's triggers.
	PredictClean Outcome = "no drops"
)

// Prediction is the doctor's answer for one Service under one disruption.
type Prediction struct {
	Outcome Outcome `json:"outcome"`
	// Rules are the IDs of the findings behind it, in report order
	// (worst first).
	Rules []string `json:"rules,omitempty"`
}

// Predict says what the report's findings on service ("service/ns/name")
// predict for a disruption that produces triggers: drops when an error
// finding's rule needs one of them, a risk with only warnings, none
// otherwise. Info findings predict nothing, except an undecided rule's
// (Rule.Undecided: whether clients reuse connections, say), a risk.
func (r *Report) Predict(service string, triggers []incident.Trigger) Prediction {
	p := Prediction{Outcome: PredictClean}
	for _, f := range r.Findings {
		if f.Service != service {
			continue
		}
		rule, ok := RuleByID(f.RuleID)
		if !ok || !slices.ContainsFunc(rule.Triggers, func(t incident.Trigger) bool { return slices.Contains(triggers, t) }) {
			continue
		}
		if f.Severity < Warning && !rule.Undecided {
			continue
		}
		if !slices.Contains(p.Rules, f.RuleID) {
			p.Rules = append(p.Rules, f.RuleID)
		}
		if f.Severity >= Error {
			p.Outcome = PredictDrops
		} else if p.Outcome == PredictClean {
			p.Outcome = PredictRisk
		}
	}
	return p
}

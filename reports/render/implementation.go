package render

import (
	"strings"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// vendorView is a run's implementation block, for a vendor's submission.
type vendorView struct {
	Impl zdv1.Implementation
	// LB and Platform fall back to what the run recorded.
	LB, Platform string
	Set          *zdv1.ScenarioSet
	// Submission is the paragraph to attach, recomputed from the
	// scenarios shown (never report.json's own text, which nothing checks);
	// Note says when report.json's text differs from it.
	Submission string
	Note       string
	// Missing names what a submission should say and this one does not.
	Missing []string
}

// vendorOf builds the block. The summary is recomputed from the scenarios,
// which `zerodrop report` has checked against their run files.
func vendorOf(r *Run) vendorView {
	rep := *r.Report
	rep.Scenarios = make([]zdv1.Scenario, len(r.Scenarios))
	for i, sc := range r.Scenarios {
		rep.Scenarios[i] = sc.Scenario
	}
	stored := rep.Summary.Submission
	rep.Summarize()
	v := vendorView{Set: rep.ScenarioSet, Submission: rep.Summary.Submission}
	if rep.Implementation != nil {
		v.Impl = *rep.Implementation
	}
	v.LB, v.Platform = rep.LoadBalancerText(), rep.PlatformText()
	if stored != "" && stored != v.Submission {
		v.Note = "report.json's own submission text differs from what its scenarios give; shown is the latter"
	}
	for _, m := range []struct{ name, value string }{
		{"organization", v.Impl.Organization}, {"project", v.Impl.Project}, {"version", v.Impl.Version},
		{"contact", strings.Join(v.Impl.Contact, "")},
	} {
		if m.value == "" {
			v.Missing = append(v.Missing, m.name)
		}
	}
	if v.Set == nil {
		v.Missing = append(v.Missing, "scenario set")
	}
	return v
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

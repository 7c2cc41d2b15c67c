// Package render turns zerodrop report.json files (and the run files they
// name) into what people read: a Markdown summary for a pull request or a
// GitHub job summary, a single self-contained HTML page with timeline plots
// and the readiness matrix, and JUnit XML for CI systems.
//
// Every output is deterministic for the same inputs (no "generated at"
// stamps, no map-order effects) and carries no secret: reports are redacted
// with zdv1.Redact when loaded, event texts from run files with
// zdv1.RedactString, and every finished document gets a last
// zdv1.ScrubText pass.
//
// Documentation scenarios (the naive profiles that document a hazard) are
// drawn apart from failures everywhere: a blue "DOC" badge with the verdict
// they documented, never a red one, and they never count as failures.
package render

import (
	"fmt"
	"slices"
	"strings"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// Failed reports whether the runs' assertions fail: any assertion scenario
// is FAIL or ERROR, or a report has no scenario at all (it proves nothing).
func Failed(runs []*Run) bool {
	for _, r := range runs {
		if len(r.Scenarios) == 0 {
			return true
		}
		for _, sc := range r.Scenarios {
			if sc.Role != zdv1.RoleDocumentation && sc.Verdict.Status != zdv1.Pass {
				return true
			}
		}
	}
	return false
}

// Totals summarises every run rendered together.
type Totals struct {
	Status                                                  zdv1.Status
	Runs, Scenarios, Passed, Failed, Errored, Documentation int
	// Verified scenarios were re-derived from their run files; Unverified
	// ones have none to check against; OtherVersion ones were written by
	// another zerodrop whose analysis differs in detail (see Evidence).
	Verified, Unverified, OtherVersion int
	// Signed scenarios' run files carry a signature a trusted key made
	// (WithVerifyKeys).
	Signed int
}

// Total adds up the runs: Status is the worst over assertion scenarios (ERROR
// when there is nothing to judge).
func Total(runs []*Run) Totals {
	t := Totals{Status: zdv1.Pass, Runs: len(runs)}
	for _, r := range runs {
		for _, sc := range r.Scenarios {
			t.Scenarios++
			switch sc.Evidence {
			case EvidenceVerified:
				t.Verified++
			case EvidenceUnverified:
				t.Unverified++
			case EvidenceOtherVersion:
				t.OtherVersion++
			}
			if sc.Signed {
				t.Signed++
			}
			if sc.Role == zdv1.RoleDocumentation {
				t.Documentation++
				continue
			}
			switch sc.Verdict.Status {
			case zdv1.Pass:
				t.Passed++
			case zdv1.Fail:
				t.Failed++
			default:
				t.Errored++
			}
			t.Status = zdv1.Worst(t.Status, sc.Verdict.Status)
		}
		if len(r.Scenarios) == 0 {
			t.Status = zdv1.Error
		}
	}
	if t.Scenarios == 0 {
		t.Status = zdv1.Error
	}
	return t
}

// Badge describes how a scenario's verdict is shown.
type Badge struct {
	// Class is the CSS class: pass, fail, error, doc or doc-error.
	Class string
	// Text is the short badge text: "PASS", "FAIL", "ERROR", "DOC · FAIL".
	Text string
	// Emoji is the Markdown marker.
	Emoji string
	// Title explains the badge.
	Title string
}

func badgeFor(role zdv1.Role, st zdv1.Status) Badge {
	if role == zdv1.RoleDocumentation {
		b := Badge{Class: "doc", Text: "DOC", Emoji: "📘",
			Title: "documentation scenario: measures a known hazard; never fails the suite"}
		if st == zdv1.Error {
			// The hazard could not even be measured: worth a look, still not
			// a suite failure.
			b.Class, b.Emoji, b.Text = "doc-error", "⚠️", "DOC · ERROR"
			b.Title = "documentation scenario whose run broke: the hazard was not measured"
		}
		return b
	}
	switch st {
	case zdv1.Pass:
		return Badge{Class: "pass", Text: "PASS", Emoji: "✅", Title: "every criterion held"}
	case zdv1.Fail:
		return Badge{Class: "fail", Text: "FAIL", Emoji: "❌", Title: "a criterion did not hold"}
	default:
		return Badge{Class: "error", Text: string(st), Emoji: "⚠️", Title: "the run itself broke: no verdict on the platform"}
	}
}

// Badge is how the scenario's result is shown: its Outcome, and for a
// documentation scenario that dropped requests, how many (that is the
// hazard it documents).
// AgainMark follows a cell's badge (matrix, scenario tables) when it was
// measured again (zdv1.Scenario.Remeasured): its verdict is a later
// measurement's, the spoiled ones are in its section.
func (sc *Scenario) AgainMark() string {
	if len(sc.Remeasured) == 0 {
		return ""
	}
	return fmt.Sprintf(" · measured %d×", len(sc.Remeasured)+1)
}

func (sc *Scenario) Badge() Badge {
	if sc.Role != zdv1.RoleDocumentation {
		return badgeFor(sc.Role, sc.Verdict.Status)
	}
	out := sc.Outcome()
	if out == string(zdv1.Error) {
		return badgeFor(sc.Role, zdv1.Error)
	}
	b := badgeFor(sc.Role, zdv1.Pass)
	b.Text = "DOC · " + out
	if sc.Results.Dropped > 0 {
		b.Text += " · " + formatCount(sc.Results.Dropped) + " dropped"
	}
	if sc.Unexpected() {
		// Expected elsewhere, not silently documented: the hazard appeared
		// where a mechanism should prevent it, or vanished where it lives.
		b.Class, b.Emoji, b.Text = "doc-error", "⚠️", b.Text+" · UNEXPECTED"
		b.Title = "documentation scenario whose outcome is not the expected one (" + sc.Expected.Outcome + "): see why"
	}
	if sc.Verdict.Status == zdv1.Error {
		b.Title += "; the load generator missed some spans (see the load check), but what it did measure reproduced the hazard"
	}
	return b
}

// headline is the one-line reason for a scenario's verdict: the first reason
// that did not pass, or the dropped-requests reason for a pass.
func (sc *Scenario) headline() string {
	if sc.Role == zdv1.RoleDocumentation && sc.Expected != nil && sc.Outcome() != string(zdv1.Error) {
		// What happened, in every case: reproduced with what was measured,
		// or not reproduced with the mechanism that prevents it.
		return sc.OutcomeText()
	}
	for _, r := range sc.Verdict.Reasons {
		if r.Status != zdv1.Pass {
			return r.Message
		}
	}
	limit := ""
	if sc.PlatformLimit != "" {
		limit = " (platform limit on this LB, see the scenario)"
	}
	if sc.Role == zdv1.RoleDocumentation && sc.Results.Dropped > 0 {
		// Documentation cases set no drop limit, so no reason mentions the
		// hazard they exist to show.
		return fmt.Sprintf("documented hazard: %s of %s requests dropped in %d failure window(s)%s",
			formatCount(sc.Results.Dropped), formatCount(sc.Results.Total), len(sc.FailureWindows), limit)
	}
	if limit != "" {
		return fmt.Sprintf("%s of %s requests dropped this time%s", formatCount(sc.Results.Dropped), formatCount(sc.Results.Total), limit)
	}
	for _, r := range sc.Verdict.Reasons {
		if r.Check == "dropped" {
			return r.Message
		}
	}
	return ""
}

// why is the headline's main clause, the text before its first "; ": the
// reasons' messages put the finding first and its details after, and the
// details are in the verdict table once.
func (sc *Scenario) why() string {
	h := sc.headline()
	if i := strings.Index(h, "; "); i > 0 {
		h = h[:i]
	}
	if n := len(sc.Remeasured); n > 0 {
		h += fmt.Sprintf(" (measured again after %d measurement(s) the load generator spoiled)", n)
	}
	return h
}

// failedChecks names the checks that did not pass with their figures:
// "dropped 51 (limit 0), load ERROR". Empty when all passed.
func (sc *Scenario) failedChecks() string {
	var parts []string
	for _, r := range sc.Verdict.Reasons {
		if r.Status == zdv1.Pass {
			continue
		}
		s := r.Check
		switch {
		case r.Observed != nil && r.Limit != nil:
			s += " " + trimFloat(*r.Observed) + " (limit " + trimFloat(*r.Limit) + ")"
		case r.Status != zdv1.Fail:
			s += " " + string(r.Status)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// ownHeadline is the headline when it says something no reason says (a
// documented hazard, a platform limit), else "": the reasons are shown in
// full in the verdict table right below, once.
func (sc *Scenario) ownHeadline() string {
	h := sc.headline()
	for _, r := range sc.Verdict.Reasons {
		if r.Message == h {
			return ""
		}
	}
	return h
}

// clientIPCheck summarises the source-IP figures: "ok (10.0.0.1)",
// "3 mismatches (expected 10.0.0.1)", or "" when nothing was checked.
func (sc *Scenario) clientIPCheck() string {
	r := sc.Results
	if r.ExpectedClientIP == "" && sc.Criteria.ForbiddenClientIP == "" && r.ForwardedClientIP == "" {
		return ""
	}
	var parts []string
	if r.ExpectedClientIP != "" {
		if r.ClientIPMismatches == 0 && len(r.ClientIPs) > 0 {
			parts = append(parts, "preserved ("+r.ExpectedClientIP+")")
		} else {
			parts = append(parts, fmt.Sprintf("%s mismatches (expected %s)", formatCount(r.ClientIPMismatches), r.ExpectedClientIP))
		}
	}
	if r.ForwardedClientIP != "" {
		if r.ForwardedMismatches == 0 && len(r.ForwardedFor) > 0 {
			parts = append(parts, "in X-Forwarded-For ("+r.ForwardedClientIP+")")
		} else {
			parts = append(parts, fmt.Sprintf("%s without %s in X-Forwarded-For", formatCount(r.ForwardedMismatches), r.ForwardedClientIP))
		}
	}
	if f := sc.Criteria.ForbiddenClientIP; f != "" {
		seen := false
		for _, c := range r.ClientIPs {
			if c.Name == f && c.Count > 0 {
				seen = true
			}
		}
		if seen {
			parts = append(parts, "forbidden "+f+" seen")
		} else {
			parts = append(parts, "forbidden "+f+" hidden")
		}
	}
	return strings.Join(parts, "; ")
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// classesText is "refused 12, http-503 3".
func classesText(m map[string]int64) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, k+" "+formatCount(m[k]))
	}
	return strings.Join(parts, ", ")
}

func pct(share float64) string { return fmt.Sprintf("%.1f%%", 100*share) }

func eventText(e zdv1.Event) string {
	s := e.Type
	if e.Object != "" {
		s += " " + e.Object
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

package suites

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	zdv1 "zerodrop/apis/v1"
)

func TestBrokenRunSaysWhatBroke(t *testing.T) {
	sc := Scenarios()[0]
	c := sc.Cases[0]
	got := brokenRun(sc, c, errors.New("deployment zd/echo did not roll out"))
	if got.Name != sc.Name+"/"+c.Name() || got.Verdict.Status != zdv1.Error || len(got.Verdict.Reasons) != 1 ||
		!strings.Contains(got.Verdict.Reasons[0].Message, "did not roll out") || got.Description != sc.Description {
		t.Errorf("broken run = %+v", got)
	}
}

func TestSummaryPrintsTheOutcomeAndEveryReason(t *testing.T) {
	doc := zdv1.Scenario{
		ScenarioSpec: zdv1.ScenarioSpec{Name: "rolling-update/local/naive", Role: zdv1.RoleDocumentation},
		Results:      zdv1.Results{Total: 2000, Dropped: 75},
		Verdict: zdv1.Verdict{Status: zdv1.Pass, Reasons: []zdv1.Reason{
			{Check: "run", Status: zdv1.Pass, Message: "run complete"},
			{Check: "load", Status: zdv1.Pass, Message: "load delivered as scheduled"},
		}},
	}
	s := summary(doc)
	for _, want := range []string{"rolling-update/local/naive [documentation] hazard reproduced: 2000 requests, 75 dropped", "run complete", "load delivered"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(strings.SplitN(s, "\n", 2)[0], "PASS") {
		t.Errorf("a documentation case's summary says PASS:\n%s", s)
	}
}

func TestConfigureCloudLBRejectsAnUnknownProfile(t *testing.T) {
	s := &Suite{Settings: Settings{LB: "cloud", LBProfile: "no-such-profile", Provider: "existing"}}
	if err := configureCloudLB(context.Background(), s, func(string) {}); err == nil || !strings.Contains(err.Error(), "no-such-profile") {
		t.Errorf("err = %v, want one naming the profile", err)
	}
	s.Settings.LBProfile = "metallb"
	if err := configureCloudLB(context.Background(), s, func(string) {}); err == nil || !strings.Contains(err.Error(), "not a profile the cloud LB runs") {
		t.Errorf("LB_PROFILE=metallb with LB=cloud: err = %v, want a refusal (MetalLB runs that model)", err)
	}
	s.Settings.LBProfile = "generic"
	if err := configureCloudLB(context.Background(), s, func(string) {}); err != nil {
		t.Fatalf("generic profile: %v", err)
	}
	if s.LB.Name != "generic" || s.LB.RemovalLag() != 30*time.Second || s.LBProfileFor("x") != "generic" {
		t.Errorf("LB %+v / profile %q not taken from the stock profile", s.LB, s.LBProfileFor("x"))
	}
}

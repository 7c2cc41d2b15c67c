package workloadtest

import (
	"strings"
	"testing"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/suites"
)

func TestPick(t *testing.T) {
	all := Scenarios()
	if len(all) == 0 {
		t.Fatal("no scenario a user's workload can meet")
	}
	for _, sc := range all {
		if !sc.Own {
			t.Errorf("%s is not one a user's workload meets", sc.Name)
		}
	}
	got, err := Pick("")
	if err != nil || len(got) != len(all) {
		t.Errorf("Pick(\"\") = %d scenarios, %v; want all %d", len(got), err, len(all))
	}
	got, err = Pick(" " + all[0].Name + " ")
	if err != nil || len(got) != 1 || got[0].Name != all[0].Name {
		t.Errorf("Pick(%q) = %v, %v", all[0].Name, got, err)
	}
	if _, err := Pick("no-such"); err == nil || !strings.Contains(err.Error(), all[0].Name) {
		t.Errorf("an unknown name: err = %v, want one naming the known", err)
	}
}

func TestLeaveOutAndBeforeAfter(t *testing.T) {
	scs := []suites.Scenario{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	keep, left := LeaveOut(scs, func(sc suites.Scenario) bool { return sc.Name == "b" }, "why")
	if len(keep) != 2 || keep[0].Name != "a" || keep[1].Name != "c" || len(left) != 1 || left[0] != (LeftOut{"b", "why"}) {
		t.Errorf("LeaveOut = %v, %v", keep, left)
	}
	models := []suites.Model{{Name: "metallb"}, {Name: "gke-l4"}}
	cell := func(n int64) zdv1.Scenario { return zdv1.Scenario{Results: zdv1.Results{Dropped: n}} }
	before := map[string]zdv1.Scenario{"a/metallb": cell(5), "a/gke-l4": cell(7), "c/gke-l4": cell(1)}
	after := map[string]zdv1.Scenario{"c/gke-l4": cell(0), "a/gke-l4": cell(0)}
	pairs := BeforeAfter(before, after, scs, models)
	if len(pairs) != 2 || pairs[0].Scenario != "a" || pairs[0].Model != "gke-l4" || pairs[0].Before.Results.Dropped != 7 ||
		pairs[1].Scenario != "c" || pairs[1].Before.Results.Dropped != 1 || pairs[1].After.Results.Dropped != 0 {
		t.Errorf("BeforeAfter = %+v", pairs)
	}
}

package scenario

import (
	"encoding/json"
	"testing"

	"zerodrop/harness/runfile"
	"zerodrop/reports"
)

// SetCriteria records the complete criteria as an event, so the run file
// carries every criterion the verdict uses.
func TestSetCriteriaRecordsTheCompleteCriteria(t *testing.T) {
	sink := &deferredSink{}
	r := &Run{Spec: Spec{ScenarioSpec: reports.ScenarioSpec{Name: "s", Criteria: reports.Criteria{MaxDropped: reports.Int64(0)}}}, sink: sink}
	if err := r.SetCriteria("client address", func(c *reports.Criteria) { c.ForbiddenClientIP = "172.18.0.1" }); err != nil {
		t.Fatal(err)
	}
	if len(sink.buf) != 1 || sink.buf[0].Type != runfile.Criteria || sink.buf[0].Source != runfile.SourceHarness {
		t.Fatalf("events %+v, want one harness criteria event", sink.buf)
	}
	var got reports.Criteria
	if err := json.Unmarshal([]byte(sink.buf[0].Fields[runfile.CriteriaField]), &got); err != nil {
		t.Fatal(err)
	}
	if got.ForbiddenClientIP != "172.18.0.1" || got.MaxDropped == nil || *got.MaxDropped != 0 {
		t.Errorf("recorded criteria %+v: want the header's maxDropped and the new forbidden IP", got)
	}
	r.finished = true
	if err := r.SetCriteria("too late", func(*reports.Criteria) {}); err == nil {
		t.Error("criteria set after Finish were accepted")
	}
}

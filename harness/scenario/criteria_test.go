package scenario

import (
	"encoding/json"
	"testing"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// SetCriteria records the complete criteria as an event, so the run file
// carries every criterion the verdict uses.
func TestSetCriteriaRecordsTheCompleteCriteria(t *testing.T) {
	sink := &deferredSink{}
	r := &Run{Spec: Spec{ScenarioSpec: zdv1.ScenarioSpec{Name: "s", Criteria: zdv1.Criteria{MaxDropped: zdv1.Int64(0)}}}, sink: sink}
	if err := r.SetCriteria("client address", func(c *zdv1.Criteria) { c.ForbiddenClientIP = "172.18.0.1" }); err != nil {
		t.Fatal(err)
	}
	if len(sink.buf) != 1 || sink.buf[0].Type != zdv1.EventCriteria || sink.buf[0].Source != zdv1.SourceHarness {
		t.Fatalf("events %+v, want one harness criteria event", sink.buf)
	}
	var got zdv1.Criteria
	if err := json.Unmarshal([]byte(sink.buf[0].Fields[zdv1.CriteriaField]), &got); err != nil {
		t.Fatal(err)
	}
	if got.ForbiddenClientIP != "172.18.0.1" || got.MaxDropped == nil || *got.MaxDropped != 0 {
		t.Errorf("recorded criteria %+v: want the header's maxDropped and the new forbidden IP", got)
	}
	r.stop()
	if err := r.SetCriteria("too late", func(*zdv1.Criteria) {}); err == nil {
		t.Error("criteria set after the load stopped were accepted")
	}
}

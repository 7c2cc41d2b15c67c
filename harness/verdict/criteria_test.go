package verdict

import (
	"encoding/json"
	"testing"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// criteriaEvent is what scenario.Run.SetCriteria writes.
func criteriaEvent(t *testing.T, ms int, c zdv1.Criteria) zdv1.Event {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return zdv1.Event{Time: at(ms), Source: zdv1.SourceHarness, Type: zdv1.EventCriteria,
		Message: "set after the header", Fields: map[string]string{zdv1.CriteriaField: string(b)}}
}

// Criteria a scenario settles after the header (the client address the LB
// shows, the pods that exist, the pod it turned unready) are in the run file
// as criteria events, so that analysing the file alone, with or without a
// user's override of other criteria, gives the verdict the suite gave.
func TestLateCriteriaDecideTheVerdict(t *testing.T) {
	header := zdv1.Criteria{MaxDropped: zdv1.Int64(0)}
	var rs []zdv1.Result
	for i := range 20 {
		rs = append(rs, ok(i*10, "p1", "n1")) // every response saw 127.0.0.1
	}
	removed := zdv1.Event{Time: at(50), Source: zdv1.SourceKubernetes, Type: zdv1.EventEndpointRemoved,
		Object: "pod/ns/p1", Fields: map[string]string{"pod": "p1"}}
	tests := []struct {
		name     string
		late     zdv1.Criteria
		events   []zdv1.Event
		override *zdv1.Criteria
		check    string
		want     zdv1.Status
	}{
		{"forbidden client IP set late", zdv1.Criteria{ForbiddenClientIP: "127.0.0.1"}, nil, nil, "forbidden-client-ip", zdv1.Fail},
		{"... and still there after an override of another criterion", zdv1.Criteria{ForbiddenClientIP: "127.0.0.1"}, nil,
			&zdv1.Criteria{MaxDropped: zdv1.Int64(5)}, "forbidden-client-ip", zdv1.Fail},
		{"expected client IP set late", zdv1.Criteria{ExpectedClientIP: "10.0.0.9"}, nil, nil, "client-ip", zdv1.Fail},
		{"expected pods set late", zdv1.Criteria{ExpectedPods: []string{"p1", "p2"}, RequireAllPodsServed: true}, nil, nil,
			"pods-served", zdv1.Fail},
		{"served after removal", zdv1.Criteria{ServedAfterRemoval: &zdv1.AfterRemovalLimit{Pod: "p1", GraceMs: 20}},
			[]zdv1.Event{removed}, nil, "served-after-endpoint-removed", zdv1.Fail},
		{"served only within the grace", zdv1.Criteria{ServedAfterRemoval: &zdv1.AfterRemovalLimit{Pod: "p1", GraceMs: 1000}},
			[]zdv1.Event{removed}, nil, "served-after-endpoint-removed", zdv1.Pass},
		{"no removal recorded", zdv1.Criteria{ServedAfterRemoval: &zdv1.AfterRemovalLimit{Pod: "p1", GraceMs: 20}},
			nil, nil, "served-after-endpoint-removed", zdv1.Error},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			late := tc.late
			late.MaxDropped = header.MaxDropped
			evs := append(append([]zdv1.Event{}, tc.events...), criteriaEvent(t, 100, late))
			var opts []Option
			if tc.override != nil {
				opts = append(opts, WithOverrides(*tc.override))
			}
			sc := analyze(t, runSpec{crit: header, results: rs, events: evs}, opts...)
			r := reason(sc, tc.check)
			if r == nil {
				t.Fatalf("no %s reason: %+v", tc.check, sc.Verdict.Reasons)
			}
			if r.Status != tc.want {
				t.Errorf("%s = %s (%s), want %s", tc.check, r.Status, r.Message, tc.want)
			}
			if tc.override != nil && *sc.Criteria.MaxDropped != 5 {
				t.Errorf("override lost: maxDropped %d", *sc.Criteria.MaxDropped)
			}
		})
	}
}

// The served-after-removal counts: answers to requests sent after the
// removal plus the grace, split by connection reuse.
func TestServedAfterRemovalCounts(t *testing.T) {
	var rs []zdv1.Result
	for i := range 10 {
		r := ok(i*100, "p1", "n1")
		r.ConnRequest = i + 1 // one keep-alive connection
		rs = append(rs, r)
	}
	fresh := ok(950, "p1", "n1") // a new connection after the removal
	rs = append(rs, fresh)
	evs := []zdv1.Event{
		{Time: at(300), Source: zdv1.SourceKubernetes, Type: zdv1.EventEndpointRemoved, Fields: map[string]string{"pod": "p1"}},
		criteriaEvent(t, 310, zdv1.Criteria{ServedAfterRemoval: &zdv1.AfterRemovalLimit{Pod: "p1", GraceMs: 250, Max: 0}}),
	}
	sc := analyze(t, runSpec{results: rs, events: evs})
	ar := sc.Results.AfterRemoval
	if ar == nil || ar.EndpointRemoved == nil || !ar.EndpointRemoved.Equal(at(300)) {
		t.Fatalf("after removal = %+v", ar)
	}
	// Sent after 550 ms: 600..900 on the reused connection (4), 950 new (1).
	if ar.Served != 5 || ar.Reused != 4 || ar.NewConnections != 1 {
		t.Errorf("served %d (reused %d, new %d), want 5 (4, 1)", ar.Served, ar.Reused, ar.NewConnections)
	}
	if r := reason(sc, "served-after-endpoint-removed"); r == nil || r.Status != zdv1.Fail || *r.Observed != 5 {
		t.Errorf("reason = %+v", r)
	}
}

// A criteria event that cannot be read leaves the run unjudgeable.
func TestUnreadableCriteriaEventIsARunProblem(t *testing.T) {
	bad := zdv1.Event{Time: at(10), Source: zdv1.SourceHarness, Type: zdv1.EventCriteria,
		Fields: map[string]string{zdv1.CriteriaField: "{not json"}}
	sc := analyze(t, runSpec{crit: zdv1.Criteria{MaxDropped: zdv1.Int64(0)}, results: []zdv1.Result{ok(0, "p", "n")},
		events: []zdv1.Event{bad}})
	if sc.Verdict.Status != zdv1.Error {
		t.Errorf("verdict %s, want ERROR: %+v", sc.Verdict.Status, sc.Verdict.Reasons)
	}
}

package lb

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	cloudlbv1 "zerodrop.dev/zerodrop/apis/cloudlb/v1"
)

// Settled: the LB did what it will do before load starts; Quiet: it also
// has nothing left to do after a disruption (no timed drain, no removal
// unprogrammed).
func TestServiceStateSettledAndQuiet(t *testing.T) {
	base := cloudlbv1.ServiceState{Service: "ns/web", VIP: "10.0.0.200", Forwarding: true, Eligible: []string{"a", "b"}, Active: []string{"a", "b"}}
	for _, tc := range []struct {
		name               string
		edit               func(*cloudlbv1.ServiceState)
		settled, wantQuiet bool
	}{
		{"forwarded, every verdict in", func(*cloudlbv1.ServiceState) {}, true, true},
		{"no address", func(s *cloudlbv1.ServiceState) { s.VIP = "" }, false, false},
		{"in the programming delay", func(s *cloudlbv1.ServiceState) { s.Forwarding = false }, false, false},
		{"a node short of its healthy threshold", func(s *cloudlbv1.ServiceState) { s.Pending = []string{"b"} }, false, false},
		{"profile error", func(s *cloudlbv1.ServiceState) { s.Error = "bad" }, false, false},
		{"failing open on verdicts (every node failed)", func(s *cloudlbv1.ServiceState) { s.FailingOpen = true }, true, true},
		{"a backend draining until its deadline", func(s *cloudlbv1.ServiceState) {
			s.Draining = []cloudlbv1.Backend{{Node: "b", State: cloudlbv1.Draining, Deadline: time.Now().Add(time.Minute)}}
		}, true, false},
		{"a backend draining, its flows kept", func(s *cloudlbv1.ServiceState) {
			s.Draining = []cloudlbv1.Backend{{Node: "b", State: cloudlbv1.Draining}}
		}, true, true},
		{"a removal not programmed", func(s *cloudlbv1.ServiceState) { s.Eligible = []string{"a"} }, true, false},
		{"a node out and removed", func(s *cloudlbv1.ServiceState) { s.Eligible, s.Active = []string{"a"}, []string{"a"} }, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base
			tc.edit(&s)
			if got := s.Settled(); got != tc.settled {
				t.Errorf("Settled() = %t, want %t for %+v", got, tc.settled, s)
			}
			if got := s.Quiet(); got != tc.wantQuiet {
				t.Errorf("Quiet() = %t, want %t for %+v", got, tc.wantQuiet, s)
			}
		})
	}
}

func TestWaitSettled(t *testing.T) {
	var calls atomic.Int32
	pending := cloudlbv1.ServiceState{Service: "ns/web", VIP: "10.0.0.200", Forwarding: true, Pending: []string{"b"}, Policy: "Cluster",
		Health: map[string]cloudlbv1.NodeHealth{"b": {Expected: true, Last: &cloudlbv1.CheckResult{URL: "http://10.0.0.2:10256/healthz", OK: true, Status: 200}}}}
	settled := pending
	settled.Pending, settled.Active = nil, []string{"a", "b"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/state" {
			http.NotFound(w, r)
			return
		}
		s := pending
		if calls.Add(1) >= 3 {
			s = settled
		}
		_ = json.NewEncoder(w).Encode([]cloudlbv1.ServiceState{{Service: "ns/other"}, s})
	}))
	defer srv.Close()

	got, err := WaitSettled(context.Background(), srv.URL, "ns/web", 10*time.Second)
	if err != nil || strings.Join(got.Active, ",") != "a,b" || calls.Load() < 3 {
		t.Fatalf("WaitSettled = %+v, %v after %d polls", got, err, calls.Load())
	}
	_, err = WaitSettled(context.Background(), srv.URL, "ns/missing", 600*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "did not settle service ns/missing") || !strings.Contains(err.Error(), "does not implement it") {
		t.Fatalf("missing service: %v", err)
	}
	calls.Store(-100)
	_, err = WaitSettled(context.Background(), srv.URL, "ns/web", 600*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "b should turn healthy (kube-proxy serves every node with Cluster), LB says unhealthy (last: GET http://10.0.0.2:10256/healthz -> 200") {
		t.Fatalf("pending node must be named with its last check: %v", err)
	}
}

func TestServiceStateSummary(t *testing.T) {
	s := cloudlbv1.ServiceState{VIP: "10.0.0.200", Profile: "gcp-nlb", Eligible: []string{"a", "b", "c"}, Active: []string{"a"},
		Health:   map[string]cloudlbv1.NodeHealth{"a": {Healthy: true}, "b": {}, "c": {}},
		Excluded: map[string]string{"d": "cordoned"}}
	want := "10.0.0.200 profile gcp-nlb: active [a]; unhealthy [b c]; not eligible: d (cordoned)"
	if got := s.Summary(); got != want {
		t.Fatalf("Summary() = %q, want %q", got, want)
	}
}

func TestDescribeUnsettled(t *testing.T) {
	last := &cloudlbv1.CheckResult{URL: "http://10.0.0.2:31000/healthz", Status: 503}
	for _, tc := range []struct {
		name string
		s    cloudlbv1.ServiceState
		want string
	}{
		{"programming delay", cloudlbv1.ServiceState{VIP: "10.0.0.200"}, "address 10.0.0.200 not forwarded yet (programming delay)"},
		{"not checked", cloudlbv1.ServiceState{VIP: "v", Forwarding: true, Pending: []string{"a"}}, "a not checked yet"},
		{"Local, endpoint not yet seen by the check", cloudlbv1.ServiceState{VIP: "v", Forwarding: true, Policy: "Local", Pending: []string{"b"},
			Health: map[string]cloudlbv1.NodeHealth{"b": {Expected: true, Last: last}}},
			"b should turn healthy (Local: it holds a ready endpoint), LB says unhealthy (last: GET http://10.0.0.2:31000/healthz -> 503 in 0s)"},
		{"Local, endpoint gone", cloudlbv1.ServiceState{VIP: "v", Forwarding: true, Policy: "Local", Pending: []string{"b"},
			Health: map[string]cloudlbv1.NodeHealth{"b": {Healthy: true, Last: &cloudlbv1.CheckResult{URL: "u", OK: true, Status: 200}}}},
			"b should turn unhealthy (Local: no ready endpoint on it), LB says healthy (last: GET u -> 200 in 0s)"},
		{"healthy, not acted on", cloudlbv1.ServiceState{VIP: "v", Forwarding: true, Pending: []string{"c"},
			Health: map[string]cloudlbv1.NodeHealth{"c": {Healthy: true, Expected: true, Last: &cloudlbv1.CheckResult{URL: "u", OK: true, Status: 200}}}},
			"c healthy but not yet a backend (last: GET u -> 200 in 0s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := describeUnsettled(tc.s); got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestQuiet(t *testing.T) {
	states := []cloudlbv1.ServiceState{
		{Service: "ns/quiet", VIP: "10.0.0.200", Forwarding: true, Eligible: []string{"a"}, Active: []string{"a"}},
		{Service: "ns/draining", VIP: "10.0.0.201", Forwarding: true, Eligible: []string{"a"}, Active: []string{"a"},
			Draining: []cloudlbv1.Backend{{Node: "b", State: cloudlbv1.Draining, Deadline: time.Now().Add(time.Minute)}}},
		{Service: "ns/unsettled", VIP: "10.0.0.202", Forwarding: true, Pending: []string{"b"}},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _ = json.NewEncoder(w).Encode(states) }))
	defer srv.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		service  string
		want     bool
		wantDesc string
		wantErr  string
	}{
		{"ns/quiet", true, "active [a]", ""},
		{"ns/draining", false, "1 draining", ""},
		{"ns/unsettled", false, "b", ""},
		{"ns/missing", false, "", "does not implement service ns/missing"},
	} {
		got, desc, err := Quiet(ctx, srv.URL, tc.service)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want %q", tc.service, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want || !strings.Contains(desc, tc.wantDesc) {
			t.Errorf("%s: Quiet = %t, %q, %v; want %t and a description with %q", tc.service, got, desc, err, tc.want, tc.wantDesc)
		}
	}
}

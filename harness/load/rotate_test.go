package load_test

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/load"
)

// Connections used in turn stay busy, each on the backend it was first
// forwarded to, where Go's own pool lets one connection carry the load:
// behind a round-robin forwarder (a Service's per-connection choice) four
// lanes reach both backends, one request on each lane in turn.
func TestRotationKeepsEveryConnectionBusy(t *testing.T) {
	if testing.Short() {
		t.Skip("sends load for a few seconds")
	}
	a := startEcho(t, "echo-a", "node-0")
	b := startEcho(t, "echo-b", "node-0")
	fwd := newRoundRobin(t, 0, 0, a, b)
	for _, tc := range []struct {
		name   string
		rotate int
	}{
		{"four lanes", 4},
		{"control: Go's pool", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := load.New(load.WithTargets("http://"+fwd+"/"), load.WithRate(40), load.WithDuration(1500*time.Millisecond),
				load.WithTimeout(2*time.Second), load.WithRotation(tc.rotate))
			if err != nil {
				t.Fatal(err)
			}
			if got := l.Settings().RotateConnections; got != tc.rotate {
				t.Errorf("run file settings: rotateConnections %d, want %d", got, tc.rotate)
			}
			sink := &memSink{}
			if _, err := l.Run(context.Background(), sink); err != nil {
				t.Fatal(err)
			}
			sink.mu.Lock()
			defer sink.mu.Unlock()
			rs := slices.Clone(sink.results)
			slices.SortFunc(rs, func(x, y zdv1.Result) int { return cmp.Compare(x.Seq, y.Seq) })
			uses := map[string]int{}
			pods := map[string]bool{}
			for _, r := range rs {
				if r.Status != 200 || r.ConnID == "" {
					t.Fatalf("request %d: status %d conn %q (%s)", r.Seq, r.Status, r.ConnID, r.Error)
				}
				uses[r.Pod+"/"+r.ConnID]++
				pods[r.Pod] = true
			}
			most := 0
			for _, n := range uses {
				most = max(most, n)
			}
			t.Logf("%d requests over %d connections %v", len(rs), len(uses), uses)
			if tc.rotate == 0 {
				// The control: the pool reuses its most recent connection
				// (a latency spike on a busy machine opens a few more).
				if most < len(rs)*2/3 {
					t.Errorf("control: the busiest connection carried %d of %d; Go's pool no longer favours one connection, so this test shows nothing", most, len(rs))
				}
				return
			}
			if len(uses) != tc.rotate || len(pods) != 2 {
				t.Fatalf("%d connections on %d backends, want %d on both", len(uses), len(pods), tc.rotate)
			}
			// In turn: every connection carried its share, none idled.
			for c, n := range uses {
				if share := len(rs) / tc.rotate; n < share-2 || n > share+2 {
					t.Errorf("connection %s carried %d of %d requests, want about %d: not in turn", c, n, len(rs), share)
				}
			}
		})
	}
}

package verdict

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/runfile"
)

func TestServedAfterRemoval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	w, err := runfile.Create(path, zdv1.Header{RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	res := func(at time.Duration, pod string, connReq, status int) {
		if err := w.Result(zdv1.Result{Time: t0.Add(at), Pod: pod, ConnRequest: connReq, Status: status}); err != nil {
			t.Fatal(err)
		}
	}
	res(0, "a", 1, 200)
	res(500*time.Millisecond, "a", 2, 200)
	if err := w.Event(zdv1.Event{Time: t0.Add(time.Second), Source: zdv1.SourceKubernetes, Type: zdv1.EventEndpointRemoved, Fields: map[string]string{"pod": "a"}}); err != nil {
		t.Fatal(err)
	}
	res(1500*time.Millisecond, "a", 3, 200) // inside the grace
	res(3*time.Second, "a", 4, 200)         // reused connection after removal
	res(4*time.Second, "a", 1, 200)         // new connection after removal
	res(5*time.Second, "a", 5, 0)           // failed: not served
	res(6*time.Second, "b", 9, 200)         // another pod
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ServedAfterRemoval(context.Background(), path, "a", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got.Removed != t0.Add(time.Second) || got.Served != 2 || got.Reused != 1 || got.NewConnections != 1 || got.Last != t0.Add(4*time.Second) {
		t.Errorf("got %+v", got)
	}
	none, err := ServedAfterRemoval(context.Background(), path, "b", time.Second)
	if err != nil || !none.Removed.IsZero() || none.Served != 0 {
		t.Errorf("pod without removal: %+v, %v", none, err)
	}
}

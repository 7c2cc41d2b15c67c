package verdict

import (
	"context"
	"fmt"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/runfile"
)

// AfterRemoval is what one pod served after Kubernetes took it out of its
// Service's endpoints: the keep-alive hazard of incident keepalive-unready, where a front end
// (here the load generator) keeps using connections that kube-proxy's NAT
// already pinned to the pod.
type AfterRemoval struct {
	Pod string
	// Removed is when the first endpoint-removed (or endpoint-terminating)
	// event for the pod was recorded; zero when there was none.
	Removed time.Time
	// Served counts 2xx answers from the pod to requests sent after Removed
	// plus the grace; Reused those of them over a reused connection.
	Served, Reused int64
	// NewConnections counts those answers that came on a connection's first
	// request: kube-proxy itself still sent new connections to the pod.
	NewConnections int64
	// Last is the send time of the last such request.
	Last time.Time
}

// ServedAfterRemoval scans a run file for the pod's endpoint removal and
// counts the requests it answered after it. grace allows for kube-proxy to
// apply the change on every node (its sync period is about a second).
func ServedAfterRemoval(ctx context.Context, path, pod string, grace time.Duration) (AfterRemoval, error) {
	out := AfterRemoval{Pod: pod}
	_, err := runfile.ReadFile(path, func(r runfile.Record) error {
		if r.Event != nil && out.Removed.IsZero() && r.Event.Fields["pod"] == pod &&
			(r.Event.Type == zdv1.EventEndpointRemoved || r.Event.Type == zdv1.EventEndpointTerminating) {
			out.Removed = r.Event.Time
		}
		return ctx.Err()
	})
	if err != nil {
		return out, fmt.Errorf("read %s: %w", path, err)
	}
	if out.Removed.IsZero() {
		return out, nil
	}
	cut := out.Removed.Add(grace)
	_, err = runfile.ReadFile(path, func(r runfile.Record) error {
		res := r.Result
		if res == nil || res.Pod != pod || !res.OK() || !res.Time.After(cut) {
			return nil
		}
		out.Served++
		if res.ConnRequest > 1 {
			out.Reused++
		} else {
			out.NewConnections++
		}
		if res.Time.After(out.Last) {
			out.Last = res.Time
		}
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}

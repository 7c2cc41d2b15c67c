package lb

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	cloudlbv1 "zerodrop.dev/zerodrop/apis/cloudlb/v1"
)

// FetchState reads the LB's view of every Service from its admin server at
// baseURL (GET /state).
func FetchState(ctx context.Context, baseURL string) ([]cloudlbv1.ServiceState, error) {
	u := baseURL + "/state"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("LB state %s: %w", u, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("LB state %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return nil, fmt.Errorf("LB state %s: HTTP %d: %s", u, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	var all []cloudlbv1.ServiceState
	if err := json.NewDecoder(resp.Body).Decode(&all); err != nil {
		return nil, fmt.Errorf("LB state %s: %w", u, err)
	}
	return all, nil
}

// WaitSettled polls the LB at baseURL until it has settled for service
// ("namespace/name"; see ServiceState.Settled) and returns that state. A
// scenario's load must not start before: during the first health checks a
// fail-open LB spreads flows over nodes that cannot serve them (Local), and
// the move to the health-checked set is a backend change of its own.
func WaitSettled(ctx context.Context, baseURL, service string, timeout time.Duration) (cloudlbv1.ServiceState, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	for {
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		all, err := FetchState(rctx, baseURL)
		rcancel()
		if err != nil {
			last = err.Error()
		} else {
			last = "the LB does not implement it"
			for _, s := range all {
				if s.Service != service {
					continue
				}
				if s.Settled() {
					return s, nil
				}
				last = describeUnsettled(s)
			}
		}
		select {
		case <-ctx.Done():
			if ctx.Err() == context.DeadlineExceeded {
				return cloudlbv1.ServiceState{}, fmt.Errorf("cloud LB at %s did not settle service %s within %v (last: %s); `zerodrop lb state` shows what it does, `zerodrop lb events` why",
					baseURL, service, timeout, last)
			}
			return cloudlbv1.ServiceState{}, fmt.Errorf("waiting for the cloud LB to settle service %s: %w", service, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Quiet asks the LB at baseURL once whether it has nothing left to do for
// service (ServiceState.Quiet) and returns its one-line summary. A Service
// the LB does not know is an error: asking assumes it implements it.
func Quiet(ctx context.Context, baseURL, service string) (bool, string, error) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	all, err := FetchState(rctx, baseURL)
	if err != nil {
		return false, "", err
	}
	for _, s := range all {
		if s.Service == service {
			if !s.Settled() {
				return false, describeUnsettled(s), nil
			}
			return s.Quiet(), s.Summary(), nil
		}
	}
	return false, "", fmt.Errorf("the LB at %s does not implement service %s", baseURL, service)
}

func describeUnsettled(s cloudlbv1.ServiceState) string {
	var why []string
	if s.Error != "" {
		why = append(why, "error: "+s.Error)
	}
	if s.VIP == "" {
		why = append(why, "no address yet")
	} else if !s.Forwarding {
		why = append(why, "address "+s.VIP+" not forwarded yet (programming delay)")
	}
	for _, n := range s.Pending {
		h, ok := s.Health[n]
		var w string
		switch {
		case !ok || h.Last == nil:
			w = n + " not checked yet"
		case h.Healthy == h.Expected:
			w = n + " healthy but not yet a backend"
		default:
			want := "healthy (kube-proxy serves every node with Cluster)"
			if s.Policy == "Local" {
				want = "healthy (Local: it holds a ready endpoint)"
				if !h.Expected {
					want = "unhealthy (Local: no ready endpoint on it)"
				}
			}
			w = fmt.Sprintf("%s should turn %s, LB says %s", n, want, map[bool]string{true: "healthy", false: "unhealthy"}[h.Healthy])
		}
		if ok && h.Last != nil {
			w += " (last: " + h.Last.String() + ")"
		}
		why = append(why, w)
	}
	if s.FailingOpen {
		why = append(why, "failing open")
	}
	return strings.Join(why, "; ")
}

package load_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"

	"zerodrop.dev/zerodrop/apis/contract"
	"zerodrop.dev/zerodrop/harness/load"
)

// TestFrontAttribution: an answer that came through a proxy standing as
// the workload's Pods is the proxy's (its response headers name its Pod
// and node), not the echo server's behind it, and carries none of the
// echo server's view of its connection, which is the proxy's.
func TestFrontAttribution(t *testing.T) {
	backend, err := url.Parse("http://" + startEcho(t, "echo-backend-1", "node-b"))
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(backend)
	rp.ModifyResponse = func(r *http.Response) error {
		r.Header.Set(contract.FrontPodHeader, "traefik-a")
		r.Header.Set(contract.FrontNodeHeader, "node-a")
		return nil
	}
	front := httptest.NewServer(rp)
	t.Cleanup(front.Close)
	for _, tc := range []struct {
		name, target, pod, node string
		connID                  bool
	}{
		{"through the front", front.URL + "/", "traefik-a", "node-a", false},
		{"the echo server itself", backend.String() + "/", "echo-backend-1", "node-b", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			results, _ := runLoad(t, load.WithTargets(tc.target), load.WithRate(50), load.WithDuration(300*time.Millisecond), load.WithTimeout(2*time.Second))
			if len(results) == 0 {
				t.Fatal("no results")
			}
			for _, r := range results {
				// httputil's proxy appends the address it saw to
				// X-Forwarded-For, as Traefik and HAProxy (forwardfor) do.
				if !r.OK() || r.Pod != tc.pod || r.Node != tc.node || (r.ConnID != "") != tc.connID || (r.Ready != nil) != tc.connID ||
					r.ClientIP != "127.0.0.1" || r.ForwardedFor != "" {
					t.Fatalf("result %+v: want pod %s node %s, connection known %t", r, tc.pod, tc.node, tc.connID)
				}
			}
		})
	}
}

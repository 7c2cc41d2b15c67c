package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	cloudlbv1 "zerodrop.dev/zerodrop/apis/cloudlb/v1"
)

func TestLBState(t *testing.T) {
	fail := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fail {
			http.Error(w, "not synced with the API server yet", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode([]cloudlbv1.ServiceState{{Service: "ns/web", VIP: "10.0.0.200", Forwarding: true, Pending: []string{"b"}}})
	}))
	defer srv.Close()

	code, out, errOut := runCLI(t, "lb", "state", "--url", srv.URL)
	if code != exitOK || !strings.Contains(out, `"service": "ns/web"`) || !strings.Contains(out, `"pending": [`) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	fail = true
	code, _, errOut = runCLI(t, "lb", "state", "--url", srv.URL)
	if code != exitFailed || !strings.Contains(errOut, "HTTP 503: not synced with the API server yet") {
		t.Fatalf("an LB that answers 503 must fail the command with its reason: exit %d, stderr %q", code, errOut)
	}
}

package echo

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func TestAdminSwitches(t *testing.T) {
	srv := start(t, testConfig())
	admin := "http://" + srv.admin
	tests := []struct {
		method, path string
		wantCode     int
		wantBody     string // substring
		wantReady    bool
		wantKA       bool
	}{
		{"POST", "/admin/ready?value=false", 200, `"changed":true`, false, true},
		{"POST", "/admin/ready?value=false", 200, `"changed":false`, false, true},
		{"POST", "/admin/keepalive?value=false", 200, `"keepalive":false`, false, false},
		{"POST", "/admin/ready?value=true", 200, `"ready":true`, true, false},
		{"POST", "/admin/keepalive?value=true", 200, `"keepalive":true`, true, true},
		{"POST", "/admin/ready?value=maybe", 400, "value=true or value=false", true, true},
		{"POST", "/admin/ready?value=1", 400, "value=true or value=false", true, true},
		{"POST", "/admin/keepalive?value=", 400, "value=true or value=false", true, true},
		{"POST", "/admin/keepalive", 400, "missing value", true, true},
		{"POST", "/admin/ready", 400, "missing value", true, true},
		{"GET", "/admin/ready?value=false", 405, "", true, true},
		{"PUT", "/admin/stats", 405, "", true, true},
		{"GET", "/admin/nope", 404, "", true, true},
	}
	for _, tt := range tests {
		resp, body := request(t, tt.method, admin+tt.path)
		if resp.StatusCode != tt.wantCode || !strings.Contains(string(body), tt.wantBody) {
			t.Errorf("%s %s: %s %q, want %d containing %q", tt.method, tt.path, resp.Status, body, tt.wantCode, tt.wantBody)
		}
		if tt.wantCode == 200 {
			var st State
			if err := json.Unmarshal(body, &st); err != nil {
				t.Errorf("%s %s: answer is not State JSON: %v", tt.method, tt.path, err)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("%s %s: Content-Type %q", tt.method, tt.path, ct)
			}
		}
		if st := srv.stats(t); st.Ready != tt.wantReady || st.KeepAlive != tt.wantKA {
			t.Errorf("after %s %s: ready %v keepalive %v, want %v %v", tt.method, tt.path, st.Ready, st.KeepAlive, tt.wantReady, tt.wantKA)
		}
	}
	// One log line per real change: ready off, ready on, keep-alive off, keep-alive on.
	var n int
	for _, m := range srv.logs.messages(t) {
		if m == "readiness switched" || m == "keep-alive switched" {
			n++
		}
	}
	if n != 4 {
		t.Errorf("%d switch log lines, want 4 (no line for a no-op or a rejected call): %q", n, srv.logs.messages(t))
	}
}

func TestAdminStatsAndMetrics(t *testing.T) {
	srv := start(t, testConfig())
	c := dial(t, srv.traffic)
	c.do("GET", "/", "HTTP/1.1")
	c.do("GET", "/", "HTTP/1.1")
	request(t, "POST", "http://"+srv.admin+"/admin/ready?value=false")
	c.do("GET", "/", "HTTP/1.1")
	c.do("GET", "/readyz", "HTTP/1.1")
	get(t, "http://"+srv.traffic+"/") // a second, closed connection

	var st Stats
	eventually(t, 5*time.Second, "open_connections to settle at 1", func() bool {
		st = srv.stats(t)
		return st.OpenConnections == 1
	})
	want := Stats{Pod: "echo-0", ServedTotal: 4, ServedWhileUnready: 2, OpenConnections: 1, ConnectionsTotal: 2, KeepAlive: true}
	if st != want {
		t.Fatalf("stats\n got %+v\nwant %+v", st, want)
	}
	resp, body := get(t, "http://"+srv.admin+"/admin/stats")
	var raw map[string]any
	if err := json.Unmarshal(body, &raw); err != nil || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("stats: %v %q", err, resp.Header.Get("Content-Type"))
	}
	for _, k := range []string{"served_total", "served_while_unready", "served_while_draining", "open_connections", "connections_total", "ready", "keepalive", "draining"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("stats lack contract field %q: %s", k, body)
		}
	}

	resp, body = get(t, "http://"+srv.admin+"/metrics")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics: %s %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics is not Prometheus text: %v", err)
	}
	for name, want := range map[string]float64{
		"zerodrop_echo_served_total":                   4,
		"zerodrop_echo_served_while_unready_total":     2,
		"zerodrop_echo_served_while_draining_total":    0,
		"zerodrop_echo_connections_total":              2,
		"zerodrop_echo_open_connections":               1,
		"zerodrop_echo_ready":                          0,
		"zerodrop_echo_keepalive":                      1,
		"zerodrop_echo_draining":                       0,
		"zerodrop_echo_terminating":                    0,
		"zerodrop_echo_served_while_terminating_total": 0,
	} {
		f, ok := fams[name]
		if !ok || len(f.GetMetric()) != 1 {
			t.Errorf("metric %s missing", name)
			continue
		}
		m := f.GetMetric()[0]
		got := m.GetGauge().GetValue() + m.GetCounter().GetValue()
		if got != want {
			t.Errorf("metric %s = %v, want %v", name, got, want)
		}
	}
	if _, ok := fams["go_goroutines"]; !ok {
		t.Error("Go runtime metrics missing")
	}
}

// Two servers in one process keep separate state and registries: nothing
// is global (a shared default registry would panic on the second register).
func TestServersAreIndependent(t *testing.T) {
	a, b := start(t, testConfig()), start(t, testConfig())
	request(t, "POST", "http://"+a.admin+"/admin/ready?value=false")
	get(t, "http://"+a.traffic+"/")
	if st := b.stats(t); !st.Ready || st.ServedTotal != 0 {
		t.Errorf("server b saw server a's state: %+v", st)
	}
	_, body := get(t, "http://"+b.admin+"/metrics")
	if !strings.Contains(string(body), "zerodrop_echo_served_total 0") {
		t.Error("server b's metrics include server a's traffic")
	}
}

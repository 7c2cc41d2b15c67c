package echo

import (
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestEchoBody(t *testing.T) {
	srv := start(t, testConfig())
	c := dial(t, srv.traffic)
	before := time.Now().UTC()
	resp, body := c.do("GET", "/some/path?x=1", "HTTP/1.1", "X-Request-Id: req-42", "X-Forwarded-For: 203.0.113.9", "X-Forwarded-For: 10.1.1.1")
	after := time.Now().UTC()

	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %s, want 200: %s", resp.Status, body)
	}
	for h, want := range map[string]string{
		"Content-Type":   "application/json",
		"X-Echo-Pod":     "echo-0",
		"X-Request-Id":   "req-42",
		"Content-Length": strconv.Itoa(len(body)),
	} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("header %s = %q, want %q", h, got, want)
		}
	}

	// Every contract field is present by name, whatever its value.
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, body)
	}
	for _, k := range []string{"pod", "node", "namespace", "pod_ip", "client_ip", "client_port", "x_forwarded_for",
		"ready", "draining", "keepalive", "conn_id", "conn_request", "seq", "time", "request_id"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("body lacks contract field %q: %s", k, body)
		}
	}

	r := decodeReply(t, body)
	local := c.c.LocalAddr().(*net.TCPAddr)
	if r.Pod != "echo-0" || r.Node != "node-a" || r.Namespace != "zd" || r.PodIP != "10.244.1.7" {
		t.Errorf("identity = %q %q %q %q", r.Pod, r.Node, r.Namespace, r.PodIP)
	}
	if r.ClientIP != "127.0.0.1" || r.ClientPort != local.Port {
		t.Errorf("client = %s:%d, want the test's own socket 127.0.0.1:%d", r.ClientIP, r.ClientPort, local.Port)
	}
	if r.XForwardedFor != "203.0.113.9, 10.1.1.1" {
		t.Errorf("x_forwarded_for = %q, want both header lines joined", r.XForwardedFor)
	}
	if !r.Ready || r.Draining || r.Terminating || !r.KeepAlive {
		t.Errorf("state = ready %v draining %v terminating %v keepalive %v, want true false false true", r.Ready, r.Draining, r.Terminating, r.KeepAlive)
	}
	if r.ConnID == "" || r.ConnRequest != 1 || r.Seq != 1 || r.RequestID != "req-42" {
		t.Errorf("conn_id %q conn_request %d seq %d request_id %q", r.ConnID, r.ConnRequest, r.Seq, r.RequestID)
	}
	ts, err := time.Parse(time.RFC3339Nano, r.Time)
	if err != nil {
		t.Fatalf("time %q is not RFC3339Nano: %v", r.Time, err)
	}
	if ts.Before(before) || ts.After(after) {
		t.Errorf("time %s outside the request's window [%s, %s]", ts, before, after)
	}

	// No X-Request-Id: empty field, no header.
	resp, body = c.do("GET", "/", "HTTP/1.1")
	if r := decodeReply(t, body); r.RequestID != "" || resp.Header.Get("X-Request-Id") != "" {
		t.Errorf("without X-Request-Id: body %q header %q, want both empty", r.RequestID, resp.Header.Get("X-Request-Id"))
	}
}

// conn_id is stable on a connection and differs between connections;
// conn_request counts per connection; seq counts server-wide.
func TestConnIdentityAndCounters(t *testing.T) {
	srv := start(t, testConfig())
	a, b := dial(t, srv.traffic), dial(t, srv.traffic)
	type step struct {
		c           *rawConn
		path        string
		wantConnReq uint64
		wantSeq     uint64 // 0: a probe, no body to check
	}
	var idA, idB string
	for i, s := range []step{
		{a, "/", 1, 1}, {a, "/x", 2, 2}, {b, "/", 1, 3}, {a, "/healthz", 3, 0}, {a, "/", 4, 4}, {b, "/readyz", 2, 0}, {b, "/", 3, 5},
	} {
		resp, body := s.c.do("GET", s.path, "HTTP/1.1")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("step %d %s: %s", i, s.path, resp.Status)
		}
		if s.wantSeq == 0 {
			continue
		}
		r := decodeReply(t, body)
		if r.ConnRequest != s.wantConnReq || r.Seq != s.wantSeq {
			t.Errorf("step %d: conn_request %d seq %d, want %d %d", i, r.ConnRequest, r.Seq, s.wantConnReq, s.wantSeq)
		}
		id := &idA
		if s.c == b {
			id = &idB
		}
		if *id == "" {
			*id = r.ConnID
		} else if *id != r.ConnID {
			t.Errorf("step %d: conn_id changed on one connection: %q then %q", i, *id, r.ConnID)
		}
	}
	if idA == idB {
		t.Errorf("two connections share conn_id %q", idA)
	}
	st := srv.stats(t)
	if st.ServedTotal != 5 || st.ConnectionsTotal != 2 {
		t.Errorf("stats served_total %d connections_total %d, want 5 (probes excluded) and 2", st.ServedTotal, st.ConnectionsTotal)
	}
}

func TestProbesAndAdminUnreachableOnTrafficPort(t *testing.T) {
	srv := start(t, testConfig())
	base := "http://" + srv.traffic
	if resp, _ := get(t, base+"/healthz"); resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz: %s", resp.Status)
	}
	if resp, _ := get(t, base+"/readyz"); resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz while ready: %s", resp.Status)
	}
	for _, tt := range []struct{ method, path string }{
		{"POST", "/admin/ready?value=false"}, {"POST", "/admin/keepalive?value=false"}, {"GET", "/admin/stats"},
		{"GET", "/metrics"}, {"GET", "/admin"}, {"GET", "/admin/"},
	} {
		resp, body := request(t, tt.method, base+tt.path)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s %s on the traffic port: %s, want 404: %s", tt.method, tt.path, resp.Status, body)
		}
	}
	if st := srv.stats(t); !st.Ready || !st.KeepAlive {
		t.Errorf("an admin path on the traffic port changed state: %+v", st)
	}

	// Readiness off: /readyz fails, /healthz still passes, answers go on and
	// are counted as served while unready.
	if resp, body := request(t, "POST", "http://"+srv.admin+"/admin/ready?value=false"); resp.StatusCode != http.StatusOK {
		t.Fatalf("switching readiness off: %s: %s", resp.Status, body)
	}
	if resp, _ := get(t, base+"/readyz"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/readyz while unready: %s, want 503", resp.Status)
	}
	if resp, _ := get(t, base+"/healthz"); resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz while unready: %s, want 200", resp.Status)
	}
	for range 3 {
		resp, body := get(t, base+"/")
		if r := decodeReply(t, body); resp.StatusCode != http.StatusOK || r.Ready {
			t.Errorf("echo while unready: %s ready=%v, want 200 and ready=false", resp.Status, r.Ready)
		}
	}
	if st := srv.stats(t); st.ServedTotal != 3 || st.ServedWhileUnready != 3 || st.ServedWhileDraining != 0 || st.Ready {
		t.Errorf("stats after 3 unready answers: %+v", st)
	}
}

func TestDelayParameter(t *testing.T) {
	srv := start(t, testConfig())
	for _, bad := range []string{"soon", "-1s", "11m"} {
		resp, body := get(t, "http://"+srv.traffic+"/?delay="+bad)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "delay") {
			t.Errorf("delay=%s: %s %q, want 400 naming delay", bad, resp.Status, body)
		}
	}
	start := time.Now()
	resp, body := get(t, "http://"+srv.traffic+"/?delay=150ms&cachebuster=1")
	if took := time.Since(start); resp.StatusCode != http.StatusOK || took < 150*time.Millisecond {
		t.Errorf("delay=150ms: %s after %s, want 200 after at least 150ms", resp.Status, took)
	}
	decodeReply(t, body)
}

// Keep-alive on: Keep-Alive header, no Connection: close, the connection
// stays open and carries the next request. Checked on the wire.
func TestKeepAliveOnWire(t *testing.T) {
	srv := start(t, testConfig())
	c := dial(t, srv.traffic)
	for i := 1; i <= 3; i++ {
		resp, body := c.do("GET", "/", "HTTP/1.1")
		if got := resp.Header.Get("Keep-Alive"); got != "timeout=30" {
			t.Errorf("request %d: Keep-Alive %q, want timeout=30", i, got)
		}
		if resp.Close || len(c.wireHeader("Connection")) > 0 {
			t.Errorf("request %d: server asked to close a keep-alive connection", i)
		}
		if r := decodeReply(t, body); r.ConnRequest != uint64(i) || !r.KeepAlive {
			t.Errorf("request %d: conn_request %d keepalive %v", i, r.ConnRequest, r.KeepAlive)
		}
	}
	if c.closedByServer(300 * time.Millisecond) {
		t.Fatal("server closed an idle keep-alive connection")
	}
	// Probes carry the same connection policy.
	if resp, _ := c.do("GET", "/readyz", "HTTP/1.1"); resp.Header.Get("Keep-Alive") != "timeout=30" {
		t.Errorf("/readyz: Keep-Alive %q", resp.Header.Get("Keep-Alive"))
	}

	// An HTTP/1.0 client that asks for keep-alive gets it.
	c10 := dial(t, srv.traffic)
	for i := 1; i <= 2; i++ {
		resp, _ := c10.do("GET", "/", "HTTP/1.0", "Connection: keep-alive")
		if got := c10.wireHeader("Connection"); resp.Close || len(got) != 1 || !strings.EqualFold(got[0], "keep-alive") {
			t.Errorf("HTTP/1.0 request %d: Connection %q close=%v, want keep-alive", i, got, resp.Close)
		}
	}
	if c10.closedByServer(200 * time.Millisecond) {
		t.Error("server closed an HTTP/1.0 keep-alive connection")
	}
}

// Keep-alive off: every answer carries Connection: close and the server
// closes the connection after it, for HTTP/1.1 and HTTP/1.0 keep-alive
// clients, echo answers and probes alike.
func TestKeepAliveOffWire(t *testing.T) {
	cfg := testConfig()
	cfg.KeepAlive = false
	srv := start(t, cfg)
	for _, tt := range []struct {
		name, path, proto string
		headers           []string
	}{
		{"echo 1.1", "/", "HTTP/1.1", nil},
		{"echo 1.1 asking keep-alive", "/", "HTTP/1.1", []string{"Connection: keep-alive"}},
		{"echo 1.0 asking keep-alive", "/", "HTTP/1.0", []string{"Connection: keep-alive"}},
		{"readyz", "/readyz", "HTTP/1.1", nil},
		{"not found", "/admin/stats", "HTTP/1.1", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, srv.traffic)
			resp, body := c.do("GET", tt.path, tt.proto, tt.headers...)
			if got := c.wireHeader("Connection"); len(got) != 1 || got[0] != "close" || !resp.Close {
				t.Errorf("Connection on the wire %q, want exactly [close]", got)
			}
			if resp.Header.Get("Keep-Alive") != "" {
				t.Errorf("Keep-Alive %q sent with keep-alive off", resp.Header.Get("Keep-Alive"))
			}
			if tt.path == "/" {
				if r := decodeReply(t, body); r.KeepAlive {
					t.Error("body says keepalive=true")
				}
			}
			if !c.closedByServer(2 * time.Second) {
				t.Error("server did not close the connection after the answer")
			}
		})
	}
}

// The admin switch takes effect on the next answer of an already open
// connection, and switching back restores reuse.
func TestKeepAliveSwitchOnOpenConnection(t *testing.T) {
	srv := start(t, testConfig())
	admin := "http://" + srv.admin
	c := dial(t, srv.traffic)
	if resp, _ := c.do("GET", "/", "HTTP/1.1"); resp.Close {
		t.Fatal("first answer closed the connection with keep-alive on")
	}
	resp, body := request(t, "POST", admin+"/admin/keepalive?value=false")
	var st State
	if err := json.Unmarshal(body, &st); err != nil || resp.StatusCode != http.StatusOK || st.KeepAlive || !st.Changed {
		t.Fatalf("switching keep-alive off: %s %s (%v)", resp.Status, body, err)
	}
	resp, body = c.do("GET", "/", "HTTP/1.1")
	if got := c.wireHeader("Connection"); len(got) != 1 || got[0] != "close" || decodeReply(t, body).ConnRequest != 2 {
		t.Errorf("second answer on the open connection: Connection %q body %s", got, body)
	}
	if !c.closedByServer(2 * time.Second) {
		t.Error("server kept the connection open after keep-alive was switched off")
	}
	request(t, "POST", admin+"/admin/keepalive?value=true")
	c2 := dial(t, srv.traffic)
	c2.do("GET", "/", "HTTP/1.1")
	if resp, _ := c2.do("GET", "/", "HTTP/1.1"); resp.Header.Get("Keep-Alive") != "timeout=30" {
		t.Errorf("after switching back on: Keep-Alive %q", resp.Header.Get("Keep-Alive"))
	}
	if c2.closedByServer(200 * time.Millisecond) {
		t.Error("connection closed after keep-alive was switched back on")
	}
	msgs := srv.logs.messages(t)
	if n := strings.Count(strings.Join(msgs, "\n"), "keep-alive switched"); n != 2 {
		t.Errorf("%d keep-alive log lines for two switches: %q", n, msgs)
	}
}

// Without a connection context (a handler called directly) the answer is
// still complete; the peer comes from RemoteAddr.
func TestEchoWithoutConnContext(t *testing.T) {
	s, err := newServer(testConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		remote string
		ip     string
		port   int
	}{
		{"192.0.2.1:1234", "192.0.2.1", 1234},
		{"[::ffff:192.0.2.1]:80", "192.0.2.1", 80},
		{"[fd00::5]:443", "fd00::5", 443},
		{"@", "@", 0},
	} {
		w := &nullWriter{h: http.Header{}}
		r, _ := http.NewRequest("GET", "http://x/", nil)
		r.RemoteAddr = tt.remote
		s.ServeHTTP(w, r)
		rep := decodeReply(t, w.body)
		if rep.ClientIP != tt.ip || rep.ClientPort != tt.port || rep.ConnID != "" || rep.ConnRequest != 0 {
			t.Errorf("remote %q: client %q:%d conn %q/%d", tt.remote, rep.ClientIP, rep.ClientPort, rep.ConnID, rep.ConnRequest)
		}
	}
}

// nullWriter is the cheapest ResponseWriter: it keeps the last body.
type nullWriter struct {
	h    http.Header
	code int
	body []byte
}

func (w *nullWriter) Header() http.Header  { return w.h }
func (w *nullWriter) WriteHeader(code int) { w.code = code }
func (w *nullWriter) Write(p []byte) (int, error) {
	w.body = append(w.body[:0], p...)
	return len(p), nil
}

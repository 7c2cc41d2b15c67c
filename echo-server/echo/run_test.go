package echo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// refuses reports whether a new TCP connection to addr is refused.
func refuses(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return true
	}
	c.Close()
	return false
}

// The SIGTERM sequence with a delay, with and without unready-on-term:
// readiness, acceptance and keep-alive, each checked against the clock.
func TestTerminationSequence(t *testing.T) {
	const delay = time.Second
	for _, unreadyOnTerm := range []bool{true, false} {
		t.Run(fmt.Sprintf("unready-on-term=%v", unreadyOnTerm), func(t *testing.T) {
			cfg := testConfig()
			cfg.ShutdownDelay, cfg.UnreadyOnTerm, cfg.DrainTimeout = delay, unreadyOnTerm, 5*time.Second
			srv := start(t, cfg)
			idle := dial(t, srv.traffic)
			idle.do("GET", "/", "HTTP/1.1")

			t0 := time.Now()
			srv.signals <- syscall.SIGTERM
			eventually(t, 300*time.Millisecond, "the server to take the signal", func() bool {
				return slices.Contains(srv.logs.messages(t), "termination signal received")
			})

			// Readiness: fails at once with unready-on-term, else holds.
			wantReadyz := http.StatusOK
			if unreadyOnTerm {
				wantReadyz = http.StatusServiceUnavailable
			}
			if resp, _ := get(t, "http://"+srv.traffic+"/readyz"); resp.StatusCode != wantReadyz {
				t.Errorf("/readyz %s after SIGTERM: %s, want %d", time.Since(t0), resp.Status, wantReadyz)
			}

			// Serving goes on unchanged during the delay, on new and reused
			// connections; keep-alive is still offered.
			resp, body := get(t, "http://"+srv.traffic+"/")
			r := decodeReply(t, body)
			if resp.StatusCode != http.StatusOK || !r.Terminating || r.Draining || r.Ready == unreadyOnTerm {
				t.Errorf("new connection during the delay: %s terminating %v draining %v ready %v", resp.Status, r.Terminating, r.Draining, r.Ready)
			}
			resp, body = idle.do("GET", "/", "HTTP/1.1")
			if r := decodeReply(t, body); resp.Close || idle.wireHeader("Keep-Alive")[0] != "timeout=30" || r.ConnRequest != 2 {
				t.Errorf("reused connection during the delay: close=%v Keep-Alive %q conn_request %d", resp.Close, idle.wireHeader("Keep-Alive"), r.ConnRequest)
			}
			if inDelay := time.Since(t0); inDelay >= delay {
				t.Fatalf("the checks meant for the delay took %s, longer than the %s delay: machine too loaded to judge", inDelay, delay)
			}

			// After the delay and the close grace (half the drain budget; the
			// idle connection never sends again, so it takes all of it): no
			// new connections, idle ones closed.
			grace := cfg.DrainTimeout / 2
			eventually(t, delay+grace+2*time.Second, "the traffic port to refuse connections", func() bool { return refuses(srv.traffic) })
			if stopped := time.Since(t0); stopped < delay+grace {
				t.Errorf("stopped accepting %s after SIGTERM, before the %s delay and the %s close grace", stopped, delay, grace)
			}
			if !idle.closedByServer(2 * time.Second) {
				t.Error("idle keep-alive connection still open after the drain began")
			}
			if err := srv.wait(t, 5*time.Second); err != nil {
				t.Fatalf("Run: %v, want nil (exit 0)", err)
			}
			if !refuses(srv.admin) {
				t.Error("admin port still accepting after Run returned")
			}

			want := []string{"serving", "termination signal received"}
			if unreadyOnTerm {
				want = append(want, "readiness switched")
			}
			want = append(want, "draining: asking keep-alive clients to close", "draining: stopped accepting, closing idle connections",
				"drained: every traffic connection closed", "stopped")
			if got := srv.logs.messages(t); !slices.Equal(got, want) {
				t.Errorf("log lines (one per state change, none per request)\n got %q\nwant %q", got, want)
			}
			if e := srv.logs.find(t, "stopped"); e["served_total"] != float64(3) || e["served_while_terminating"] != float64(2) {
				t.Errorf("final log line counts: %v", e)
			}
		})
	}
}

// A keep-alive client that sends during the drain's close grace gets
// "Connection: close" and closes the connection itself; the server closes
// nothing under it, and with no connection left open the grace ends early.
func TestDrainLetsKeepAliveClientsClose(t *testing.T) {
	cfg := testConfig()
	cfg.DrainTimeout = 20 * time.Second // grace: 5 s (closeGrace)
	srv := start(t, cfg)
	c := dial(t, srv.traffic)
	c.do("GET", "/", "HTTP/1.1")
	srv.signals <- syscall.SIGTERM
	eventually(t, 2*time.Second, "the drain to begin", func() bool {
		return slices.Contains(srv.logs.messages(t), "draining: asking keep-alive clients to close")
	})
	if c.closedByServer(200 * time.Millisecond) {
		t.Fatal("the server closed an idle keep-alive connection at once; its client could have been writing on it")
	}
	resp, body := c.do("GET", "/", "HTTP/1.1")
	if r := decodeReply(t, body); !resp.Close || !r.Draining {
		t.Errorf("answer during the close grace: close=%v draining=%v, want Connection: close from a draining server", resp.Close, r.Draining)
	}
	c.c.Close()
	t0 := time.Now()
	if err := srv.wait(t, closeGrace); err != nil {
		t.Fatalf("Run: %v, want nil", err)
	}
	if took := time.Since(t0); took > closeGrace/2 {
		t.Errorf("Run took %s after the last connection closed, want the grace to end early", took)
	}
}

// A request in flight when draining starts is answered with
// Connection: close, then its connection is closed; Run waits for it.
func TestDrainWaitsForInFlight(t *testing.T) {
	cfg := testConfig()
	cfg.DrainTimeout = 5 * time.Second
	srv := start(t, cfg)
	idle := dial(t, srv.traffic)
	idle.do("GET", "/", "HTTP/1.1")
	busy := dial(t, srv.traffic)
	if _, err := io.WriteString(busy.c, "GET /?delay=800ms HTTP/1.1\r\nHost: echo.test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // let the server read the request

	t0 := time.Now()
	srv.signals <- syscall.SIGTERM
	// The idle connection never sends again, so it is closed when the close
	// grace (half the drain budget) ends.
	if !idle.closedByServer(cfg.DrainTimeout/2 + time.Second) {
		t.Error("idle connection not closed when the close grace ended")
	}
	eventually(t, time.Second, "the traffic port to refuse connections", func() bool { return refuses(srv.traffic) })

	resp, err := http.ReadResponse(busy.br, nil)
	if err != nil {
		t.Fatalf("the in-flight request got no answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if got := busy.wireHeader("Connection"); resp.StatusCode != http.StatusOK || len(got) != 1 || got[0] != "close" {
		t.Errorf("in-flight answer: %s Connection %q, want 200 with Connection: close", resp.Status, got)
	}
	if r := decodeReply(t, body); !r.Draining || !r.Terminating || r.Ready {
		t.Errorf("in-flight answer state: draining %v terminating %v ready %v", r.Draining, r.Terminating, r.Ready)
	}
	if !busy.closedByServer(time.Second) {
		t.Error("server kept the connection open after the in-flight answer")
	}
	if err := srv.wait(t, 5*time.Second); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if took := time.Since(t0); took < 600*time.Millisecond || took > 4*time.Second {
		t.Errorf("Run returned %s after SIGTERM; want after the in-flight request (~700ms) and before the 5s budget", took)
	}
	srv.logs.find(t, "drained: every traffic connection closed")
}

// An in-flight request outliving the budget is cut at the budget; a zero
// budget (the naive app) cuts at once. Both still exit 0.
func TestDrainTimeout(t *testing.T) {
	for _, tt := range []struct {
		budget   time.Duration
		min, max time.Duration
	}{
		{300 * time.Millisecond, 250 * time.Millisecond, 2 * time.Second},
		{0, 0, time.Second},
	} {
		t.Run(tt.budget.String(), func(t *testing.T) {
			cfg := testConfig()
			cfg.DrainTimeout = tt.budget
			srv := start(t, cfg)
			busy := dial(t, srv.traffic)
			if _, err := io.WriteString(busy.c, "GET /?delay=5s HTTP/1.1\r\nHost: echo.test\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			// A connection that never sends a request holds a drain too:
			// net/http gives a first request 5s to arrive.
			silent := dial(t, srv.traffic)
			// Both connections accepted before SIGTERM (on a busy machine the
			// accept loop can lag a fixed sleep); then a moment for net/http
			// to read the busy one's request.
			for deadline := time.Now().Add(5 * time.Second); srv.stats(t).OpenConnections < 2; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("server never saw both connections: %+v", srv.stats(t))
				}
			}
			time.Sleep(100 * time.Millisecond)
			t0 := time.Now()
			srv.signals <- syscall.SIGTERM
			if err := srv.wait(t, 5*time.Second); err != nil {
				t.Fatalf("Run: %v, want nil", err)
			}
			if took := time.Since(t0); took < tt.min || took > tt.max {
				t.Errorf("Run returned %s after SIGTERM, want within [%s, %s]", took, tt.min, tt.max)
			}
			if resp, err := http.ReadResponse(busy.br, nil); err == nil {
				t.Errorf("request past the budget was answered: %s", resp.Status)
			}
			if !silent.closedByServer(time.Second) {
				t.Error("silent connection left open")
			}
			e := srv.logs.find(t, "drain timeout: closed the connections still open")
			if e["closed_connections"] != float64(2) || e["with_request_in_flight"] != float64(1) || e["without_a_request_yet"] != float64(1) {
				t.Errorf("drain timeout log: %v, want 2 closed: 1 in flight, 1 without a request", e)
			}
		})
	}
}

// A second SIGTERM or SIGINT ends the delay or the drain at once.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	for _, tt := range []struct {
		name     string
		delay    time.Duration
		inFlight bool
		second   syscall.Signal
	}{
		{"SIGINT during delay", 30 * time.Second, false, syscall.SIGINT},
		{"SIGTERM during delay", 30 * time.Second, false, syscall.SIGTERM},
		{"SIGINT during drain", 0, true, syscall.SIGINT},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.ShutdownDelay, cfg.DrainTimeout = tt.delay, 30*time.Second
			srv := start(t, cfg)
			if tt.inFlight {
				busy := dial(t, srv.traffic)
				if _, err := io.WriteString(busy.c, "GET /?delay=30s HTTP/1.1\r\nHost: echo.test\r\n\r\n"); err != nil {
					t.Fatal(err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			srv.signals <- syscall.SIGTERM
			phase := "draining: asking keep-alive clients to close"
			if tt.delay > 0 {
				phase = "termination signal received"
			}
			eventually(t, 2*time.Second, "the server to log "+phase, func() bool {
				return slices.Contains(srv.logs.messages(t), phase)
			})
			t0 := time.Now()
			srv.signals <- tt.second
			err := srv.wait(t, 5*time.Second)
			if took := time.Since(t0); took > time.Second {
				t.Errorf("Run returned %s after the second signal, want at once", took)
			}
			if !errors.Is(err, ErrAborted) || !strings.Contains(err.Error(), sigName(tt.second)) {
				t.Errorf("Run: %v, want ErrAborted naming %s", err, sigName(tt.second))
			}
			if !refuses(srv.traffic) || !refuses(srv.admin) {
				t.Error("a port still accepts after the abort")
			}
			srv.logs.find(t, "stopped at once")
		})
	}
}

func TestContextCancelStopsAtOnce(t *testing.T) {
	cfg := testConfig()
	cfg.ShutdownDelay = 30 * time.Second
	srv := start(t, cfg)
	get(t, "http://"+srv.traffic+"/")
	srv.signals <- syscall.SIGTERM
	eventually(t, 2*time.Second, "the termination log line", func() bool {
		return slices.Contains(srv.logs.messages(t), "termination signal received")
	})
	srv.cancel()
	if err := srv.wait(t, 2*time.Second); err != nil {
		t.Fatalf("Run after cancel: %v, want nil", err)
	}
}

func TestLogRequests(t *testing.T) {
	cfg := testConfig()
	cfg.LogRequests = true
	srv := start(t, cfg)
	for range 3 {
		get(t, "http://"+srv.traffic+"/")
	}
	var n int
	for _, m := range srv.logs.messages(t) {
		if m == "request" {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d request log lines for 3 requests with LogRequests on", n)
	}
}

func TestRunSetupErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	free := func() string { return freeAddr(t) }
	cfg := testConfig()
	cfg.Listen, cfg.AdminListen = busy.Addr().String(), free()
	err = Run(context.Background(), cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "--listen") || !strings.Contains(err.Error(), busy.Addr().String()) {
		t.Errorf("traffic address in use: %v, want an error naming --listen and the address", err)
	}

	cfg.Listen, cfg.AdminListen = free(), busy.Addr().String()
	err = Run(context.Background(), cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "--admin-listen") {
		t.Errorf("admin address in use: %v, want an error naming --admin-listen", err)
	}
	// Nothing left behind: the traffic port Run opened is free again.
	l, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		t.Errorf("traffic address still held after the admin listen failed: %v", err)
	} else {
		l.Close()
	}

	cfg = testConfig()
	cfg.DrainTimeout = -time.Second
	if err := Run(context.Background(), cfg, nil); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("negative drain timeout: %v", err)
	}
	tl, _ := net.Listen("tcp", "127.0.0.1:0")
	if err := Run(context.Background(), testConfig(), nil, WithListeners(tl, nil)); err == nil {
		t.Error("WithListeners with a nil admin listener: no error")
	}
	if !refuses(tl.Addr().String()) {
		t.Error("Run left the caller's traffic listener open after rejecting the options")
	}
}

// A stand-in for an app with several ports (traffic on two, probes on a
// third) serves the same handler on every address Listen names, and its
// probe paths answer what an app's would: readiness fails with the switch,
// liveness does not, and a path that is both follows readiness.
func TestSeveralListenersAndProbePaths(t *testing.T) {
	free := func() string { return freeAddr(t) }
	cfg := testConfig()
	a, b := free(), free()
	cfg.Listen, cfg.AdminListen = a+","+b, free()
	cfg.ReadyPaths, cfg.LivePaths = []string{"/healthz", "/ready"}, []string{"/healthz", "/live"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, nil) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	status := func(addr, path string) int {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			resp, err := http.Get("http://" + addr + path)
			if err == nil {
				resp.Body.Close()
				return resp.StatusCode
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET %s%s: %v", addr, path, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, addr := range []string{a, b} {
		for path, want := range map[string]int{"/": 200, "/ready": 200, "/live": 200, "/healthz": 200, "/readyz": 200} {
			if got := status(addr, path); got != want {
				t.Errorf("ready: GET %s%s = %d, want %d", addr, path, got, want)
			}
		}
	}
	resp, err := http.Post("http://"+cfg.AdminListen+"/admin/ready?value=false", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// /readyz is no probe path here: it echoes like any other path.
	for path, want := range map[string]int{"/ready": 503, "/healthz": 503, "/live": 200, "/readyz": 200} {
		if got := status(b, path); got != want {
			t.Errorf("unready: GET %s%s = %d, want %d", b, path, got, want)
		}
	}
}

// CloseGrace 0 stands in for a server that stops accepting and closes its
// idle connections the moment it drains (nginx's graceful quit), while
// in-flight requests still get the drain budget.
func TestCloseGraceZeroStopsAcceptingAtOnce(t *testing.T) {
	cfg := testConfig()
	cfg.DrainTimeout = 20 * time.Second
	zero := time.Duration(0)
	cfg.CloseGrace = &zero
	srv := start(t, cfg)
	idle := dial(t, srv.traffic)
	idle.do("GET", "/", "HTTP/1.1")
	busy := dial(t, srv.traffic)
	if _, err := io.WriteString(busy.c, "GET /?delay=800ms HTTP/1.1\r\nHost: echo.test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	srv.signals <- syscall.SIGTERM
	if !idle.closedByServer(time.Second) {
		t.Error("idle connection still open 1 s into the drain, want it closed at once")
	}
	eventually(t, time.Second, "the traffic port to refuse connections", func() bool { return refuses(srv.traffic) })
	if resp, err := http.ReadResponse(busy.br, nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("in-flight request: %v %v, want its answer within the drain budget", resp, err)
	}
}

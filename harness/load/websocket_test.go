package load_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/load"
)

// A WebSocket load's sessions each get their messages and the server's
// normal close: status 101, every message counted, attributed to the pod.
func TestWebSocketSessions(t *testing.T) {
	addr := startEcho(t, "echo-a", "node-1")
	results, _ := runLoad(t, load.WithTargets("http://"+addr+"/"), load.WithRate(20), load.WithDuration(time.Second),
		load.WithTimeout(2*time.Second), load.WithProtocol(zdv1.ProtocolWebSocket), load.WithStream(4, 20*time.Millisecond))
	if len(results) < 18 {
		t.Fatalf("%d sessions, want about 20", len(results))
	}
	for _, r := range results {
		if !r.OK() || r.Status != 101 || r.Messages != 4 || r.WantMessages != 4 || r.Pod != "echo-a" || r.Reconnects != 0 {
			t.Fatalf("session %+v: want 101, 4 of 4 messages from echo-a", r)
		}
	}
}

// switchingLB forwards each new connection to the backend it points at
// now, as an LB that moved off a draining Pod does.
type switchingLB struct {
	ln      net.Listener
	backend atomic.Pointer[string]
	wg      sync.WaitGroup
}

func newSwitchingLB(t *testing.T, backend string) *switchingLB {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lb := &switchingLB{ln: ln}
	lb.backend.Store(&backend)
	t.Cleanup(lb.wg.Wait)
	t.Cleanup(func() { ln.Close() })
	lb.wg.Add(1)
	go func() {
		defer lb.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			lb.wg.Add(1)
			go func() {
				defer lb.wg.Done()
				defer c.Close()
				up, err := net.Dial("tcp", *lb.backend.Load())
				if err != nil {
					return
				}
				defer up.Close()
				go func() { _, _ = io.Copy(up, c); up.Close() }()
				_, _ = io.Copy(c, up)
			}()
		}
	}()
	return lb
}

// Sessions across a Pod's end behind an LB that has moved: the graceful
// drain's 1001 sends every session to the next Pod for the rest of its
// messages, and none is dropped; the naive end cuts them without a close
// frame, each a drop that says how far it got.
func TestWebSocketAcrossStops(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drain time.Duration
	}{{"graceful", 3 * time.Second}, {"hard", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := echoConfig("echo-a", "node-1")
			cfg.DrainTimeout = tc.drain
			signals := make(chan os.Signal, 1)
			a := runEcho(t, cfg, signals)
			b := startEcho(t, "echo-b", "node-2")
			lb := newSwitchingLB(t, a)
			sink := &memSink{}
			l, err := load.New(load.WithTargets("http://"+lb.ln.Addr().String()+"/"), load.WithRate(20), load.WithTimeout(time.Second),
				load.WithProtocol(zdv1.ProtocolWebSocket), load.WithStream(10, 50*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			r, err := l.Start(context.Background(), sink)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(700 * time.Millisecond)
			lb.backend.Store(&b)
			signals <- syscall.SIGTERM
			time.Sleep(300 * time.Millisecond)
			r.Stop()
			if _, err := r.Wait(); err != nil {
				t.Fatal(err)
			}
			results, events := sink.snapshot()
			closes := 0
			for _, e := range events {
				if e.Type == zdv1.EventWSClose && e.Fields["code"] == "1001" && e.Fields["reason"] == "draining: reconnect" {
					closes++
				}
			}
			if (closes > 0) != (tc.drain > 0) {
				t.Errorf("%s: %d ws-close events of 1001, want some only from the graceful drain", tc.name, closes)
			}
			var whole, moved, cut int
			for _, res := range results {
				switch {
				case res.OK() && res.Messages == 10 && res.Reconnects > 0:
					moved++
				case res.OK() && res.Messages == 10:
					whole++
				case !res.OK() && res.Messages < 10 && strings.Contains(res.Error, "without the server's close frame"):
					cut++
				default:
					t.Errorf("session %+v", res)
				}
			}
			switch {
			case tc.drain > 0 && (cut != 0 || moved == 0):
				t.Errorf("graceful: %d cut, %d moved by 1001, %d whole; want none cut, some moved", cut, moved, whole)
			case tc.drain == 0 && (cut == 0 || moved != 0):
				t.Errorf("hard: %d cut, %d moved, %d whole; want the sessions in flight cut", cut, moved, whole)
			}
		})
	}
}

// An upgrade a proxy answers with an HTTP status is that status's failure,
// as an HTTP request's is: no session, no class of its own.
func TestWebSocketUpgradeAnswered(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no backend", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	results, _ := runLoad(t, load.WithTargets(srv.URL+"/"), load.WithRate(5), load.WithDuration(time.Second),
		load.WithTimeout(time.Second), load.WithProtocol(zdv1.ProtocolWebSocket), load.WithStream(2, 10*time.Millisecond))
	if len(results) == 0 {
		t.Fatal("no results")
	}
	for _, r := range results {
		if r.Status != http.StatusServiceUnavailable || r.FailureKind() != "http-503" || r.Messages != 0 || !strings.Contains(r.Error, "HTTP 503") {
			t.Errorf("result %+v: want status 503, failure http-503", r)
		}
	}
}

// WithHost names the Host of every session's upgrade, as of every HTTP
// request.
func TestWebSocketHost(t *testing.T) {
	hosts := make(chan string, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hosts <- r.Host
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	l, err := load.New(load.WithTargets(srv.URL+"/"), load.WithRate(2), load.WithDuration(time.Second), load.WithHost("feed.example"),
		load.WithTimeout(time.Second), load.WithProtocol(zdv1.ProtocolWebSocket), load.WithStream(2, 10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Run(context.Background(), &memSink{}); err != nil {
		t.Fatal(err)
	}
	close(hosts)
	n := 0
	for h := range hosts {
		n++
		if h != "feed.example" {
			t.Errorf("upgrade with Host %q, want feed.example", h)
		}
	}
	if n == 0 {
		t.Error("no upgrade reached the server")
	}
}

package load_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/load"
)

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name string
		opts []load.Option
		want string
	}{
		{"no target", []load.Option{load.WithRate(1)}, "no target"},
		{"bad scheme", []load.Option{load.WithTargets("ftp://127.0.0.1/"), load.WithRate(1)}, "scheme"},
		{"no host", []load.Option{load.WithTargets("http:///x"), load.WithRate(1)}, "no host"},
		{"zero rate", []load.Option{load.WithTargets("http://127.0.0.1:1/")}, "rate 0"},
		{"negative duration", []load.Option{load.WithTargets("http://127.0.0.1:1/"), load.WithRate(1), load.WithDuration(-time.Second)}, "duration"},
		{"zero connections", []load.Option{load.WithTargets("http://127.0.0.1:1/"), load.WithRate(1), load.WithConnections(0)}, "connections 0"},
		{"zero timeout", []load.Option{load.WithTargets("http://127.0.0.1:1/"), load.WithRate(1), load.WithTimeout(0)}, "timeout"},
		{"port out of range", []load.Option{load.WithTargets("http://127.0.0.1:70000/"), load.WithRate(1)}, "port 70000"},
		{"zero in-flight cap", []load.Option{load.WithTargets("http://127.0.0.1:1/"), load.WithRate(1), load.WithMaxInFlight(0)}, "max in flight 0"},
		{"negative rotation", []load.Option{load.WithTargets("http://127.0.0.1:1/"), load.WithRate(1), load.WithRotation(-1)}, "rotate connections -1"},
		{"rotation past its bound", []load.Option{load.WithTargets("http://127.0.0.1:1/"), load.WithRate(1), load.WithRotation(load.MaxRotation + 1)}, "rotate connections 1025"},
		{"rotation without keep-alive", []load.Option{load.WithTargets("http://127.0.0.1:1/"), load.WithRate(1), load.WithRotation(4), load.WithKeepAlive(false)}, "rotation needs keep-alive"},
		{"negative lag bound", []load.Option{load.WithTargets("http://127.0.0.1:1/"), load.WithRate(1), load.WithMaxSendLag(-time.Millisecond)}, "max send lag"},
		// A rate whose interval rounds to nothing once divided by zero in
		// the pacer; one past the bound is refused with the bound.
		{"rate past the bound", []load.Option{load.WithTargets("http://127.0.0.1:1/"), load.WithRate(2_000_000_000)}, "1 to 100000 requests per second"},
		{"rate just past the bound", []load.Option{load.WithTargets("http://127.0.0.1:1/"), load.WithRate(load.MaxRate + 1)}, "rate 100001"},
		{"a month", []load.Option{load.WithTargets("http://127.0.0.1:1/"), load.WithRate(1), load.WithDuration(30 * 24 * time.Hour)}, "up to 168h"},
		{"an hour's timeout", []load.Option{load.WithTargets("http://127.0.0.1:1/"), load.WithRate(1), load.WithTimeout(time.Hour)}, "at most 5m"},
		{"a header in the host", []load.Option{load.WithTargets("http://127.0.0.1:1/"), load.WithRate(1), load.WithHost("a\r\nX: 1")}, "control characters"},
		{"a space in the host", []load.Option{load.WithTargets("http://127.0.0.1:1/"), load.WithRate(1), load.WithHost("a b")}, "no spaces"},
		{"an unknown protocol", []load.Option{load.WithTargets("http://127.0.0.1:1/"), load.WithRate(1), load.WithProtocol("spdy")}, `protocol "spdy"`},
		{"h2c without keep-alive", []load.Option{load.WithTargets("http://127.0.0.1:1/"), load.WithRate(1), load.WithProtocol(zdv1.ProtocolH2C), load.WithKeepAlive(false)}, "keep-alive cannot be off"},
		{"h2c over TLS", []load.Option{load.WithTargets("https://127.0.0.1:1/"), load.WithRate(1), load.WithProtocol(zdv1.ProtocolH2C)}, "is not http://"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load.New(tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want error containing %q", err, tc.want)
			}
		})
	}
	l, err := load.New(load.WithTargets("http://127.0.0.1:1/", "http://[::1]:2/x"), load.WithRate(50),
		load.WithDuration(2*time.Second), load.WithHost("svc.example"), load.WithKeepAlive(false))
	if err != nil {
		t.Fatal(err)
	}
	s := l.Settings()
	if len(s.Targets) != 2 || s.Rate != 50 || s.DurationMs != 2000 || s.KeepAlive || s.Host != "svc.example" ||
		s.Connections != load.DefaultConnections || s.TimeoutMs != 5000 ||
		s.MaxInFlight != load.DefaultMaxInFlight || s.MaxSendLagMs != 60 || s.Protocol != zdv1.ProtocolHTTP1 {
		// 50/s: three intervals are 60 ms, above the 50 ms floor.
		t.Errorf("Settings = %+v", s)
	}
	if _, err := load.New(load.WithTargets("http://127.0.0.1:1/"), load.WithRate(load.MaxRate)); err != nil {
		t.Errorf("the bound itself is refused: %v", err)
	}
	// A password in a target reaches the requests, never the run file.
	l, err = load.New(load.WithTargets("http://user:s3cretpw@127.0.0.1:1/x"), load.WithRate(1))
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Settings().Targets[0]; strings.Contains(got, "s3cretpw") || !strings.Contains(got, "127.0.0.1:1/x") {
		t.Errorf("Settings().Targets[0] = %q, want the target without its password", got)
	}
}

func TestFixedDurationAttributes(t *testing.T) {
	for _, keepAlive := range []bool{true, false} {
		name := "keepalive"
		if !keepAlive {
			name = "no-keepalive"
		}
		t.Run(name, func(t *testing.T) {
			pod, node := "echo-a", "node-1"
			addr := startEcho(t, pod, node)
			sink := &memSink{}
			opts := []load.Option{load.WithTargets("http://" + addr + "/"), load.WithRate(100), load.WithDuration(time.Second),
				load.WithKeepAlive(keepAlive), load.WithTimeout(2 * time.Second), load.WithHost("echo.test")}
			if keepAlive {
				// Without the option, a sink that is an EventSink gets them.
				opts = append(opts, load.WithEvents(sink))
			}
			l, err := load.New(opts...)
			if err != nil {
				t.Fatal(err)
			}
			sum, err := l.Run(context.Background(), sink)
			if err != nil {
				t.Fatal(err)
			}
			results, events := sink.snapshot()
			// A pause of this process (a busy machine) is recorded too,
			// and is not what this test is about.
			events = slices.DeleteFunc(events, func(e zdv1.Event) bool { return e.Type == zdv1.EventInstrumentPause })
			if n := len(results); n < 95 || n > 102 || int64(n) != sum.Results {
				t.Fatalf("got %d results (summary %d), want about 100", n, sum.Results)
			}
			ids := map[string]bool{}
			var reused int
			for _, r := range results {
				if !r.OK() {
					t.Fatalf("failed result on a clean loopback run: %+v", r)
				}
				if ids[r.ID] {
					t.Fatalf("duplicate request id %s", r.ID)
				}
				ids[r.ID] = true
				if !strings.HasPrefix(r.ID, l.RunID()+"-") {
					t.Errorf("id %s lacks run id prefix %s", r.ID, l.RunID())
				}
				if r.Pod != "echo-a" || r.Node != "node-1" || r.ClientIP != "127.0.0.1" || r.ConnID == "" || r.ConnRequest < 1 ||
					r.Ready == nil || !*r.Ready || r.Draining == nil || *r.Draining || r.Time.IsZero() || r.Latency <= 0 {
					t.Fatalf("badly attributed result %+v", r)
				}
				if r.ConnRequest > 1 {
					reused++
					if !r.Reused {
						t.Errorf("echo saw conn_request %d but the client did not mark the connection reused: %+v", r.ConnRequest, r)
					}
				}
			}
			if keepAlive && reused == 0 {
				t.Error("keep-alive run never reused a connection")
			}
			if !keepAlive && reused != 0 {
				t.Errorf("keep-alive off, yet %d requests came over reused connections", reused)
			}
			if len(events) != 2 || events[0].Message != "load started" || events[1].Message != "load stopped" ||
				events[0].Fields["host"] != "echo.test" {
				t.Errorf("events = %+v", events)
			}
			if sum.OK != sum.Results || sum.Dropped != 0 || sum.Rate() < 80 {
				t.Errorf("summary = %+v rate %.1f", sum, sum.Rate())
			}
			if sum.ByPod[pod] != sum.OK || sum.ByNode[node] != sum.OK || len(sum.ByPod) != 1 || len(sum.ByNode) != 1 {
				t.Errorf("per pod %v, per node %v; want all %d answers on %s / %s", sum.ByPod, sum.ByNode, sum.OK, pod, node)
			}
		})
	}
}

func TestOpenEndedStop(t *testing.T) {
	addr := startEcho(t, "echo-a", "node-1")
	newLoad := func(t *testing.T) *load.Load {
		l, err := load.New(load.WithTargets("http://"+addr+"/"), load.WithRate(200))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}

	t.Run("context cancel is the normal end", func(t *testing.T) {
		l := newLoad(t)
		ctx, cancel := context.WithCancel(context.Background())
		sink := &memSink{}
		r, err := l.Start(ctx, sink)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		cancel()
		select {
		case <-r.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("load did not stop within 10s of its context being cancelled")
		}
		sum, err := r.Wait()
		if err != nil {
			t.Fatalf("open-ended load stopped by cancel returned %v", err)
		}
		results, _ := sink.snapshot()
		if sum.Results < 20 || int64(len(results)) != sum.Results {
			t.Errorf("results %d (summary %d), want ~60", len(results), sum.Results)
		}
	})
	t.Run("Stop", func(t *testing.T) {
		r, err := newLoad(t).Start(context.Background(), &memSink{})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		if snap := r.Snapshot(); snap.Results == 0 {
			t.Error("Snapshot shows no results after 200ms at 200/s")
		}
		sum, err := r.Stop()
		if err != nil || sum.Results == 0 {
			t.Errorf("Stop = %+v, %v", sum, err)
		}
	})
}

func TestFixedDurationInterrupted(t *testing.T) {
	addr := startEcho(t, "echo-a", "node-1")
	l, err := load.New(load.WithTargets("http://"+addr+"/"), load.WithRate(100), load.WithDuration(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	sum, err := l.Run(ctx, &memSink{})
	if !errors.Is(err, load.ErrInterrupted) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run = %v, want ErrInterrupted wrapping the context error", err)
	}
	if sum.Results == 0 {
		t.Error("interrupted run kept no results")
	}
	if _, err := l.Start(ctx, &memSink{}); err == nil {
		t.Error("Start with a done context succeeded")
	}
}

func TestSinkFailureStopsLoad(t *testing.T) {
	addr := startEcho(t, "echo-a", "node-1")
	l, err := load.New(load.WithTargets("http://"+addr+"/"), load.WithRate(200), load.WithDuration(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	done := make(chan struct{})
	var sum load.Summary
	go func() {
		defer close(done)
		sum, err = l.Run(context.Background(), load.ResultFunc(func(zdv1.Result) error {
			if n++; n > 10 {
				return errors.New("disk full")
			}
			return nil
		}))
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("load kept running 20s after its sink failed")
	}
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Run = %v, want the sink's error", err)
	}
	if n != 11 {
		t.Errorf("sink called %d times after failing, want exactly 11 calls", n)
	}
	_ = sum
}

func TestStartsOnce(t *testing.T) {
	addr := startEcho(t, "echo-a", "node-1")
	l, err := load.New(load.WithTargets("http://"+addr+"/"), load.WithRate(50), load.WithDuration(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if _, err := l.Run(context.Background(), sink); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Run(context.Background(), sink); err == nil || !strings.Contains(err.Error(), "runs once") {
		t.Fatalf("second start of one Load: err = %v, want a refusal (request ids and the schedule belong to one run)", err)
	}
}

// An answer that is not a success says who gave it: the echo server's pod
// header when it has one, and the body's first line (which told a 404
// from something other than the workload apart).
func TestNonSuccessSaysWhoAnswered(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/pod" {
			w.Header().Set("X-Echo-Pod", "echo-b")
		}
		http.Error(w, "404 page not found\nmore", http.StatusNotFound)
	}))
	defer srv.Close()
	for path, pod := range map[string]string{"/pod": "echo-b", "/": ""} {
		results, _ := runLoad(t, load.WithTargets(srv.URL+path), load.WithRate(50), load.WithDuration(200*time.Millisecond), load.WithTimeout(time.Second))
		if len(results) == 0 {
			t.Fatal("no results")
		}
		for _, r := range results {
			if r.Status != 404 || r.Pod != pod || r.Error != "answered: 404 page not found" || r.FailureKind() != "http-404" {
				t.Fatalf("%s: result %+v, want 404 from pod %q with the body's first line", path, r, pod)
			}
		}
	}
}

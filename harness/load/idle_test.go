package load_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"zerodrop.dev/zerodrop/echo-server/echo"
	"zerodrop.dev/zerodrop/harness/load"
)

// TestIdleTimeoutInsideCloseGrace drains one of two echo servers behind a
// round-robin TCP forwarder (kube-proxy's part, for one Service address)
// while keep-alive load runs through it, and reads how many connections
// the draining server still had to close itself when its close grace
// ended. Each one it closes races the client's next request on it, which
// Go's Transport re-sends on its own; the load counts that as a drop.
//
// With the client's idle timeout inside the server's grace, the client has
// closed every connection first: none is left. The control, Go's default
// idle timeout (90 s), shows the hazard this guards against: the
// connections at the bottom of the client's pool (a stack) stay idle
// through the whole grace and are left for the server to close.
func TestIdleTimeoutInsideCloseGrace(t *testing.T) {
	if testing.Short() {
		t.Skip("drains a server under load for several seconds")
	}
	const grace = 2 * time.Second
	for _, tc := range []struct {
		name     string
		idle     time.Duration
		wantLeft bool
	}{
		{"idle timeout inside the grace", grace / 2, false},
		{"control: Go's default idle timeout", 90 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			left, retried := drainUnderLoad(t, grace, tc.idle)
			t.Logf("idle timeout %s, close grace %s: %d connections left for the server to close, %d requests re-sent by the transport",
				tc.idle, grace, left, retried)
			switch {
			case tc.wantLeft && left == 0:
				t.Errorf("control: the draining server had no idle connection left to close; the test no longer builds the pool it guards against")
			case !tc.wantLeft && left > 0:
				t.Errorf("the draining server closed %d idle connections itself at the end of its %s grace: each races a request (client idle timeout %s)",
					left, grace, tc.idle)
			}
			if !tc.wantLeft && retried > 0 {
				t.Errorf("%d requests were re-sent by the transport after a connection broke", retried)
			}
		})
	}
}

// drainUnderLoad returns how many connections the draining server had open
// when its grace ended, and how many requests the transport re-sent.
func drainUnderLoad(t *testing.T, grace, idle time.Duration) (left int64, retried int) {
	t.Helper()
	logs := &drainLog{}
	sig := make(chan os.Signal, 1)
	a := startDrainableEcho(t, "echo-a", grace, sig, logs)
	b := startDrainableEcho(t, "echo-b", grace, make(chan os.Signal), nil)
	// For its first 600 ms the forwarder answers each new connection
	// 300 ms late, so the client opens some fifteen connections, as one
	// behind a Service address does through a latency spike on a busy
	// machine; then it answers at once and one connection carries the load.
	fwd := newRoundRobin(t, 600*time.Millisecond, 300*time.Millisecond, a, b)

	l, err := load.New(load.WithTargets("http://"+fwd+"/"), load.WithRate(50),
		load.WithTimeout(2*time.Second), load.WithIdleTimeout(idle))
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run, err := l.Start(ctx, sink)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	sig <- syscall.SIGTERM
	deadline := time.Now().Add(grace + 5*time.Second)
	for !logs.graceEnded() {
		if time.Now().After(deadline) {
			t.Fatalf("the draining server did not end its %s close grace within %s of SIGTERM", grace, grace+5*time.Second)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	sum, err := run.Stop()
	if err != nil {
		t.Fatal(err)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	for _, r := range sink.results {
		if r.Retries > 0 {
			retried++
		}
	}
	t.Logf("load: %d results, %d dropped %v", sum.Results, sum.Dropped, sum.ErrorClasses)
	return logs.left(), retried
}

// startDrainableEcho serves an echo server that drains on a value on sig,
// with the given close grace, logging to logs when it is not nil.
func startDrainableEcho(t *testing.T, pod string, grace time.Duration, sig chan os.Signal, logs *drainLog) string {
	t.Helper()
	cfg := echoConfig(pod, "node-0")
	cfg.CloseGrace = &grace
	var opts []echo.Option
	if logs != nil {
		opts = append(opts, echo.WithLogger(slog.New(logs)))
	}
	return runEcho(t, cfg, sig, opts...)
}

// drainLog is a slog handler that keeps the one record this test reads:
// the end of the close grace and the connections still open then.
type drainLog struct {
	mu    sync.Mutex
	ended bool
	open  int64
}

func (*drainLog) Enabled(context.Context, slog.Level) bool { return true }
func (*drainLog) WithAttrs([]slog.Attr) slog.Handler       { panic("not used by the echo server") }
func (*drainLog) WithGroup(string) slog.Handler            { panic("not used by the echo server") }

func (d *drainLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "draining: stopped accepting, closing idle connections" {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ended = true
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "open_connections" {
			d.open = a.Value.Int64()
		}
		return true
	})
	return nil
}

func (d *drainLog) graceEnded() bool { d.mu.Lock(); defer d.mu.Unlock(); return d.ended }
func (d *drainLog) left() int64      { d.mu.Lock(); defer d.mu.Unlock(); return d.open }

// newRoundRobin forwards each accepted connection to the next backend that
// accepts it, both ways, passing half-closes on: a server's FIN reaches the
// client as a FIN, as through kube-proxy's NAT. Connections accepted in the
// first slowFor are forwarded only after lag.
func newRoundRobin(t *testing.T, slowFor, lag time.Duration, backends ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var next atomic.Uint64
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]struct{}{}
	track := func(c net.Conn, on bool) {
		mu.Lock()
		defer mu.Unlock()
		if on {
			conns[c] = struct{}{}
		} else {
			delete(conns, c)
		}
	}
	slowUntil := time.Now().Add(slowFor)
	forward := func(c net.Conn) {
		track(c, true)
		defer track(c, false)
		if time.Now().Before(slowUntil) {
			time.Sleep(lag)
		}
		var up net.Conn
		var err error
		for range backends {
			addr := backends[next.Add(1)%uint64(len(backends))]
			if up, err = net.Dial("tcp", addr); err == nil {
				break
			}
		}
		if up == nil {
			_ = c.Close()
			return
		}
		track(up, true)
		defer track(up, false)
		pipe(c, up)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				forward(c)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// pipe copies both ways until both directions end, then closes both.
func pipe(a, b net.Conn) {
	var wg sync.WaitGroup
	half := func(dst, src net.Conn) {
		defer wg.Done()
		_, err := io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok && (err == nil || errors.Is(err, io.EOF)) {
			_ = tc.CloseWrite()
			return
		}
		_ = dst.Close()
		_ = src.Close()
	}
	wg.Add(2)
	go half(a, b)
	go half(b, a)
	wg.Wait()
	_ = a.Close()
	_ = b.Close()
}

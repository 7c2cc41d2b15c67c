package load_test

import (
	"context"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/echo-server/echo"
	"zerodrop.dev/zerodrop/harness/load"
)

// startEcho runs the real echo server on loopback until the test ends and
// returns its traffic address.
func startEcho(t testing.TB, pod, node string) string {
	t.Helper()
	return runEcho(t, echoConfig(pod, node), make(chan os.Signal))
}

// echoConfig is the echo server's default settings as pod on node.
func echoConfig(pod, node string) echo.Config {
	cfg := echo.DefaultConfig()
	cfg.Identity = echo.Identity{Pod: pod, Node: node, Namespace: "test", PodIP: "127.0.0.1"}
	return cfg
}

// runEcho serves cfg on loopback listeners until the test ends (a value on
// signals starts its termination sequence first) and returns its traffic
// address. Run must return nil: after a drain, or when the test cancels it.
func runEcho(t testing.TB, cfg echo.Config, signals <-chan os.Signal, opts ...echo.Option) string {
	t.Helper()
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("echo traffic listener: %v", err)
	}
	al, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("echo admin listener: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- echo.Run(ctx, cfg, signals, append(opts, echo.WithListeners(tl, al))...) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("echo server %s: %v", cfg.Identity.Pod, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("echo server %s did not stop within 10s of cancel", cfg.Identity.Pod)
		}
	})
	return tl.Addr().String()
}

// memSink keeps results in memory (tests only).
type memSink struct {
	mu      sync.Mutex
	results []zdv1.Result
	events  []zdv1.Event
}

func (m *memSink) Result(r zdv1.Result) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.results = append(m.results, r)
	return nil
}

func (m *memSink) Event(e zdv1.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, e)
	return nil
}

func (m *memSink) snapshot() ([]zdv1.Result, []zdv1.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]zdv1.Result(nil), m.results...), append([]zdv1.Event(nil), m.events...)
}

// runLoad builds a load of opts, runs it to its end into a memSink and
// returns what it recorded; a load that cannot be built or run fails the
// test.
func runLoad(t testing.TB, opts ...load.Option) ([]zdv1.Result, []zdv1.Event) {
	t.Helper()
	l, err := load.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if _, err := l.Run(context.Background(), sink); err != nil {
		t.Fatal(err)
	}
	return sink.snapshot()
}

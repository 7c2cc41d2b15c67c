package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	zdv1 "zerodrop/apis/v1"
)

// A blackhole: accepts connections and never answers.
func blackhole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return "http://" + ln.Addr().String() + "/"
}

// The first Ctrl-C waits for the requests in flight (up to the timeout); a
// second one abandons them at once, and the run is reported as broken.
func TestSecondInterruptAbandonsInFlight(t *testing.T) {
	target := blackhole(t)
	out := filepath.Join(t.TempDir(), "twice")
	ctx, cancel := context.WithCancel(context.Background())
	interrupts := make(chan os.Signal, 2)
	var so, se bytes.Buffer
	codes := make(chan int, 1)
	go func() {
		codes <- run(ctx, &cli{stdout: &so, stderr: &se, version: "test", interrupts: interrupts},
			[]string{"load", "--target", target, "--rate", "50", "--duration", "1m", "--timeout", "30s", "--out", out})
	}()
	time.Sleep(300 * time.Millisecond)
	cancel() // what signal.NotifyContext does on the first Ctrl-C
	interrupts <- syscall.SIGINT
	time.Sleep(200 * time.Millisecond)
	select {
	case code := <-codes:
		t.Fatalf("exited (%d) after one interrupt, before its requests in flight ended\n%s", code, se.String())
	default:
	}
	start := time.Now()
	interrupts <- syscall.SIGINT
	select {
	case code := <-codes:
		if code != 2 {
			t.Errorf("exit %d, want 2 (broken)\n%s", code, se.String())
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("took %s after the second interrupt", d)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("a second interrupt did not end the load within 15s (the requests in flight have a 30s timeout)")
	}
	rep, err := zdv1.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	sc := rep.Scenarios[0]
	if sc.Verdict.Status != zdv1.Error || !strings.Contains(sc.Verdict.Reasons[0].Message, "abandoned") {
		t.Errorf("verdict %+v", sc.Verdict)
	}
	if sc.Results.Dropped != 0 {
		t.Errorf("abandoned requests counted as dropped: %d (the target did not fail them; the user gave up)", sc.Results.Dropped)
	}
}

// --max-p99 is a latency criterion: a 1 s stall shorter than the timeout
// fails it.
func TestLoadLatencyCriterion(t *testing.T) {
	slow := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(30 * time.Millisecond)
		_, _ = w.Write([]byte(`{"pod":"slow"}`))
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = slow.Serve(ln) }()
	t.Cleanup(func() { _ = slow.Close() })
	target := "http://" + ln.Addr().String() + "/"
	for _, tc := range []struct {
		limit string
		code  int
	}{{"10ms", 1}, {"2s", 0}} {
		out := filepath.Join(t.TempDir(), "p99")
		code, stdout, stderr := runCLI(t, "load", "--target", target, "--rate", "50", "--duration", "1s", "--out", out, "--max-p99", tc.limit)
		if code != tc.code || !strings.Contains(stdout, "p99") {
			t.Errorf("--max-p99 %s: exit %d, want %d\nstdout: %s\nstderr: %s", tc.limit, code, tc.code, stdout, stderr)
		}
	}
}

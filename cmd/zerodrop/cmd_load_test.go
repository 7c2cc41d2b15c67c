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

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
)

// serveLoopback serves h on a loopback port for the test and returns its URL.
func serveLoopback(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := &http.Server{ReadHeaderTimeout: time.Second, Handler: h}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String() + "/"
}

// podP answers every request as pod "p".
func podP(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"pod":"p"}`)) }

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
		codes <- run(ctx, &cli{stdout: &so, stderr: &se, version: "test", interrupts: interrupts, keyDir: testKeyDir},
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
	target := serveLoopback(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(30 * time.Millisecond)
		_, _ = w.Write([]byte(`{"pod":"slow"}`))
	})
	for _, tc := range []struct {
		limit string
		code  int
	}{{"10ms", 1}, {"2s", 0}} {
		_, code, stdout, stderr := measuredLoad(t, filepath.Join(t.TempDir(), "p99"), "--target", target, "--rate", "50", "--duration", "1s", "--max-p99", tc.limit)
		if code != tc.code || !strings.Contains(stdout, "p99") {
			t.Errorf("--max-p99 %s: exit %d, want %d\nstdout: %s\nstderr: %s", tc.limit, code, tc.code, stdout, stderr)
		}
	}
}

// --events-from records a user's lines as events of source "user" while the
// load runs, streamed into run.jsonl as they come; a bad line is reported
// on stderr and noted in the run file, and the run goes on to its verdict.
func TestLoadEventsFrom(t *testing.T) {
	target := serveLoopback(t, podP)
	dir := t.TempDir()

	t.Run("fifo", func(t *testing.T) {
		fifo := filepath.Join(dir, "events")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		out := filepath.Join(dir, "run")
		type res struct {
			code           int
			stdout, stderr string
		}
		done := make(chan res, 1)
		go func() {
			code, so, se := runCLI(t, "load", "--target", target, "--rate", "50", "--duration", "2s", "--out", out, "--events-from", fifo)
			done <- res{code, so, se}
		}()
		// Two writers one after the other, as two `echo > fifo` would be.
		time.Sleep(500 * time.Millisecond)
		writeFIFO(t, fifo, "drained node-1 by hand\n")
		// Streamed: the event is in the run file while the load still runs.
		runFile := filepath.Join(out, "run.jsonl")
		deadline := time.Now().Add(time.Second)
		for {
			b, _ := os.ReadFile(runFile)
			if strings.Contains(string(b), "drained node-1 by hand") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the user event did not reach %s within 1s of being written", runFile)
			}
			time.Sleep(20 * time.Millisecond)
		}
		writeFIFO(t, fifo, `{"type":"pod-unready","object":"pod/t/p"}`+"\n"+`{"type":"pod-unready",`+"\n")
		r := <-done
		if r.code != 0 {
			t.Fatalf("exit %d, want 0 (user events never change the verdict)\nstderr: %s", r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, "events-from: line skipped") || !strings.Contains(r.stderr, "line=3") {
			t.Errorf("stderr does not report line 3 as skipped:\n%s", r.stderr)
		}
		rep, err := zdv1.ReadFile(filepath.Join(out, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		var user, notes []string
		for _, e := range rep.Scenarios[0].Events {
			switch {
			case e.Source == zdv1.SourceUser:
				user = append(user, e.Type+" "+e.Object+e.Message)
			case e.Type == zdv1.EventNote:
				notes = append(notes, e.Message)
			}
		}
		if strings.Join(user, "|") != "action drained node-1 by hand|pod-unready pod/t/p" {
			t.Errorf("user events %q", user)
		}
		if len(notes) != 1 || !strings.Contains(notes[0], "line 3 skipped") {
			t.Errorf("notes %q, want one about line 3", notes)
		}
		// And the report marks them on the timeline, each type its own.
		if code, _, stderr := runCLI(t, "report", "--out", out, out); code != 0 {
			t.Fatalf("report exit %d\n%s", code, stderr)
		}
		html, err := os.ReadFile(filepath.Join(out, "report.html"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`class="marker marker-action"`, `class="marker marker-pod-unready"`, "drained node-1 by hand"} {
			if !strings.Contains(string(html), want) {
				t.Errorf("report.html lacks %s", want)
			}
		}
	})
	t.Run("missing file is bad input", func(t *testing.T) {
		code, _, stderr := runCLI(t, "load", "--target", target, "--rate", "50", "--duration", "1s",
			"--out", filepath.Join(dir, "none"), "--events-from", filepath.Join(dir, "absent"))
		if code != 2 || !strings.Contains(stderr, "--events-from") {
			t.Errorf("exit %d, want 2 naming --events-from\n%s", code, stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "none", "run.jsonl")); err == nil {
			t.Error("a run file was written although the input was bad")
		}
	})
}

func writeFIFO(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Error(err)
		return
	}
	defer func() { _ = f.Close() }()
	if _, err := f.WriteString(s); err != nil {
		t.Error(err)
	}
}

// The implementation flags fill report.json's vendor block; analyze keeps
// it and merges what it is given; a URL that is none is bad input.
func TestImplementationFlags(t *testing.T) {
	target := serveLoopback(t, podP)
	out := filepath.Join(t.TempDir(), "run")
	code, _, stderr := runCLI(t, "load", "--target", target, "--rate", "20", "--duration", "500ms", "--out", out,
		"--project", "example-lb", "--project-version", "v2", "--contact", "@a", "--contact", "@b", "--lb", "example-lb", "--platform", "bare metal")
	if code != 0 {
		t.Fatalf("load exit %d\n%s", code, stderr)
	}
	read := func() *zdv1.Report {
		t.Helper()
		r, err := zdv1.ReadFile(filepath.Join(out, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := read()
	if i := r.Implementation; i == nil || i.Project != "example-lb" || i.Version != "v2" || strings.Join(i.Contact, ",") != "@a,@b" ||
		i.LoadBalancer != "example-lb" || i.Platform != "bare metal" {
		t.Errorf("implementation %+v", r.Implementation)
	}
	if s := r.ScenarioSet; s == nil || s.Name != zdv1.ScenarioSetLoad || s.Version != "test" {
		t.Errorf("scenario set %+v, want load test", r.ScenarioSet)
	}
	if !strings.Contains(r.Summary.Submission, "zerodrop PASS: example-lb v2, load balancer example-lb, on bare metal.") {
		t.Errorf("submission %q", r.Summary.Submission)
	}
	if code, _, stderr := runCLI(t, "analyze", "--project-url", "example.com", out); code != 2 || !strings.Contains(stderr, "http or https") {
		t.Errorf("analyze with a bad URL: exit %d, want 2\n%s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "analyze", "--org", "Example Inc.", out); code != 0 {
		t.Fatalf("analyze exit %d\n%s", code, stderr)
	}
	r = read()
	if i := r.Implementation; i == nil || i.Organization != "Example Inc." || i.Project != "example-lb" || r.ScenarioSet == nil ||
		r.Scenarios[0].CriteriaOverrides != nil {
		t.Errorf("after analyze --org: implementation %+v, set %+v, overrides %v", r.Implementation, r.ScenarioSet, r.Scenarios[0].CriteriaOverrides)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParseRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "tool")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ok := []string{"--zerodrop", bin, "--vegeta", bin, "--echo", bin}
	tests := []struct {
		name string
		args []string
		want []string // every one must appear in the error
	}{
		{"valid", append(ok, "--rates", "100, 200"), nil},
		{"bad rates", append(ok, "--rates", "100,x,-5"), []string{`"x" is not a positive integer`, `"-5" is not a positive integer`}},
		{"missing binaries", []string{"--zerodrop", filepath.Join(dir, "nope"), "--vegeta", dir, "--echo", bin},
			[]string{"--zerodrop", "--vegeta", "make bench-load builds it"}},
		{"short duration", append(ok, "--duration", "10ms"), []string{"--duration 10ms"}},
		{"bad port", append(ok, "--port", "70000"), []string{"--port 70000"}},
		{"unknown protocol", append(ok, "--protocol", "h3"), []string{`--protocol "h3"`}},
		{"h2c without h2load", append(ok, "--protocol", "h2c", "--h2load", filepath.Join(dir, "no-h2load")), []string{"--h2load", "nghttp2-client"}},
		{"grpc without ghz", append(ok, "--protocol", "grpc", "--ghz", filepath.Join(dir, "no-ghz")), []string{"--ghz", "make bench-load builds it"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parse(tc.args)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if len(o.rates) != 2 || o.rates[0] != 100 || o.rates[1] != 200 {
					t.Errorf("rates %v, want [100 200]", o.rates)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// h2load 1.52's closing lines from a run at 1,000/s for 3 s, with 2 failed
// requests written in (its run failed none).
const h2loadOut = `Main benchmark duration is over for thread #0. Stopping all clients.

finished in 3.01s, 997.00 req/s, 333.20KB/s
requests: 2991 total, 3001 started, 2991 done, 2989 succeeded, 2 failed, 1 errored, 0 timeout
status codes: 2989 2xx, 0 3xx, 0 4xx, 1 5xx
traffic: 999.59KB (1023576) total, 14.74KB (15097) headers (space savings 94.90%), 932.21KB (954580) data
`

func TestParseH2load(t *testing.T) {
	s, err := parseH2load(h2loadOut)
	if err != nil {
		t.Fatal(err)
	}
	if s.seconds != 3.01 || s.started != 3001 || s.done != 2991 || s.failed != 2 || s.ok2xx != 2989 {
		t.Errorf("got %+v; want 3.01 s, 3001 started, 2991 done, 2 failed, 2989 2xx", s)
	}
	if _, err := parseH2load("connect: Connection refused\n"); err == nil || !strings.Contains(err.Error(), "did it run") {
		t.Errorf("h2load that never ran: error %v, want one asking whether it ran", err)
	}
}

func TestP99Micros(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 200; i++ {
		b.WriteString("1796527828093650\t200\t")
		b.WriteString(strconv.Itoa(i))
		b.WriteString("\n")
	}
	p99, n, err := p99Micros(b.String())
	if err != nil || n != 200 || p99 != 198 {
		t.Errorf("p99 of 1..200 µs: %v over %d rows (%v), want 198 over 200", p99, n, err)
	}
	if _, _, err := p99Micros(""); err == nil {
		t.Error("an empty log gave a p99")
	}
}

// ghz v0.121.0's JSON report, cut to the fields read, from a run of 2 s
// with one failed call written in, and three its stop cut.
const ghzOut = `{"count":2003,"total":2000000000,"average":900000,"rps":1000,
"errorDistribution":{"rpc error: code = Unavailable desc = connection refused":1,
 "rpc error: code = Unavailable desc = error reading from server: read tcp 127.0.0.1:1->127.0.0.1:2: use of closed network connection":3},
"statusCodeDistribution":{"OK":1999,"Unavailable":4},
"latencyDistribution":[{"percentage":50,"latency":800000},{"percentage":99,"latency":2500000}]}`

func TestReadGhz(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "report.json"), []byte(ghzOut), 0o644); err != nil {
		t.Fatal(err)
	}
	var m Measurement
	if err := readGhz(dir, &m); err != nil {
		t.Fatal(err)
	}
	// The three cut by ghz's own stop are not failures.
	if m.Sent != 1001.5 || m.Achieved != 999.5 || m.Failed != 1 || m.P99Ms != 2.5 || !strings.Contains(m.Note, "connection refused") {
		t.Errorf("measurement %+v: want 1,001.5/s sent, 999.5/s OK, 1 failed, p99 2.5 ms, the refusal noted", m)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), []byte(`{"count":0,"total":0}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := readGhz(dir, &m); err == nil || !strings.Contains(err.Error(), "did it run?") {
		t.Errorf("an empty report: %v, want an error", err)
	}
}

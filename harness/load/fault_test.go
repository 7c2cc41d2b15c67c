package load_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/load"
	"zerodrop.dev/zerodrop/harness/runfile"
	"zerodrop.dev/zerodrop/harness/verdict"
)

// Fault modes of the test proxy.
const (
	modePass      = "pass"
	modeBlackhole = "blackhole" // accept and read requests, never answer
	modeRefuse    = "refuse"    // listener closed: new connections are refused, open ones reset
	mode503       = "503"       // answer 503 without asking the backend
)

// Ground-truth outcomes the proxy records per request id.
const (
	outOK    = "ok"
	outHeld  = "held"
	out503   = "503"
	outReset = "reset"
)

// faultProxy is a real HTTP/1.1 proxy on loopback in front of the echo
// server. It reads each request (so it knows its X-Request-Id), applies the
// current fault mode and records what it did, as ground truth for the
// analysis to be checked against.
type faultProxy struct {
	t       *testing.T
	addr    string
	backend string

	mu       sync.Mutex
	mode     string
	ln       net.Listener
	conns    map[net.Conn]bool // true: held by the blackhole
	outcome  map[string]string // request id -> last outcome
	switches []modeSwitch
	wg       sync.WaitGroup
}

type modeSwitch struct {
	mode string
	at   time.Time
}

func newFaultProxy(t *testing.T, backend string) *faultProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{t: t, addr: ln.Addr().String(), backend: backend, mode: modePass, ln: ln,
		conns: map[net.Conn]bool{}, outcome: map[string]string{}}
	p.serve(ln)
	t.Cleanup(p.close)
	return p
}

func (p *faultProxy) serve(ln net.Listener) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.conns[c] = false
			p.mu.Unlock()
			p.wg.Add(1)
			go p.handle(c)
		}
	}()
}

// set switches the fault mode and returns when it is in force.
func (p *faultProxy) set(mode string) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	prev := p.mode
	if prev == modeRefuse && mode != modeRefuse {
		ln, err := net.Listen("tcp", p.addr)
		if err != nil {
			p.t.Errorf("proxy: re-listening on %s after the refuse window: %v", p.addr, err)
			return time.Now()
		}
		p.ln = ln
		p.serve(ln)
	}
	now := time.Now()
	p.mode = mode
	p.switches = append(p.switches, modeSwitch{mode: mode, at: now})
	if mode == modeRefuse {
		_ = p.ln.Close()
		// Wake connections idling between requests so they close now
		// rather than serve the next request. Held ones stay held.
		for c, held := range p.conns {
			if !held {
				_ = c.SetReadDeadline(now)
			}
		}
	}
	return now
}

func (p *faultProxy) current() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

func (p *faultProxy) record(id, outcome string) {
	p.mu.Lock()
	p.outcome[id] = outcome
	p.mu.Unlock()
}

func (p *faultProxy) handle(c net.Conn) {
	defer p.wg.Done()
	var backend net.Conn
	defer func() {
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
		if backend != nil {
			_ = backend.Close()
		}
	}()
	br := bufio.NewReader(c)
	var bbr *bufio.Reader
	for {
		if p.current() != modeRefuse {
			_ = c.SetReadDeadline(time.Time{})
		}
		req, err := http.ReadRequest(br)
		mode := p.current()
		if err != nil {
			// Between requests: a plain close. A reset here could destroy a
			// response the client has not read yet.
			_ = c.Close()
			return
		}
		id := req.Header.Get(load.RequestIDHeader)
		switch mode {
		case modeRefuse:
			p.record(id, outReset)
			rst(c)
			return
		case modeBlackhole:
			p.mu.Lock()
			p.outcome[id] = outHeld
			p.conns[c] = true
			p.mu.Unlock()
			_ = c.SetReadDeadline(time.Time{})
			_, _ = io.Copy(io.Discard, br) // hold until the client gives up
			_ = c.Close()
			return
		case mode503:
			p.record(id, out503)
			if _, err := io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n"); err != nil {
				p.record(id, outReset)
				_ = c.Close()
				return
			}
			if req.Close {
				_ = c.Close()
				return
			}
			continue
		}
		if backend == nil {
			if backend, err = net.Dial("tcp", p.backend); err != nil {
				p.t.Errorf("proxy: dial backend: %v", err)
				_ = c.Close()
				return
			}
			bbr = bufio.NewReader(backend)
		}
		if err := req.Write(backend); err != nil {
			p.t.Errorf("proxy: forward request %s: %v", id, err)
			_ = c.Close()
			return
		}
		resp, err := http.ReadResponse(bbr, req)
		if err != nil {
			p.t.Errorf("proxy: backend response for %s: %v", id, err)
			_ = c.Close()
			return
		}
		out := outOK
		if resp.StatusCode != http.StatusOK {
			out = "backend-" + resp.Status
		}
		p.record(id, out)
		werr := resp.Write(c)
		_ = resp.Body.Close()
		if werr != nil {
			p.record(id, outReset)
			_ = c.Close()
			return
		}
		if resp.Close || req.Close {
			_ = c.Close()
			return
		}
	}
}

func (p *faultProxy) close() {
	p.mu.Lock()
	if p.mode != modeRefuse {
		_ = p.ln.Close()
	}
	p.mode = modeRefuse // no re-listen from here on
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *faultProxy) groundTruth() (map[string]string, []modeSwitch) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]string, len(p.outcome))
	for k, v := range p.outcome {
		out[k] = v
	}
	return out, append([]modeSwitch(nil), p.switches...)
}

// TestFaultInjection runs attributed load through the proxy while it
// blackholes, refuses and answers 503 for known windows, then checks that
// the analysis finds each window within ±100 ms and counts exactly the
// requests the proxy failed, request by request.
func TestFaultInjection(t *testing.T) {
	for _, keepAlive := range []bool{true, false} {
		t.Run(fmt.Sprintf("keepalive=%v", keepAlive), func(t *testing.T) { faultRun(t, keepAlive) })
	}
}

func faultRun(t *testing.T, keepAlive bool) {
	const (
		rate      = 100
		timeout   = 2 * time.Second
		faultLen  = 500 * time.Millisecond
		cleanLen  = 500 * time.Millisecond
		tolerance = 100 * time.Millisecond
	)
	proxy := newFaultProxy(t, startEcho(t, "echo-0", "node-0"))
	dir := t.TempDir()
	path := filepath.Join(dir, "run.jsonl")
	l, err := load.New(load.WithTargets("http://"+proxy.addr+"/"), load.WithRate(rate), load.WithTimeout(timeout),
		load.WithKeepAlive(keepAlive))
	if err != nil {
		t.Fatal(err)
	}
	settings := l.Settings()
	w, err := runfile.Create(path, zdv1.Header{
		Scenario: zdv1.ScenarioSpec{Name: "fault-injection", Role: zdv1.RoleAssertion,
			Criteria: zdv1.Criteria{MaxDropped: zdv1.Int64(0), WindowGapMs: 200}},
		Load: &settings,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	loadStart := time.Now()
	run, err := l.Start(ctx, w)
	if err != nil {
		t.Fatal(err)
	}

	type window struct {
		mode       string
		start, end time.Time
	}
	var injected []window
	for _, mode := range []string{modeBlackhole, modeRefuse, mode503} {
		time.Sleep(cleanLen)
		start := proxy.set(mode)
		_ = w.Event(zdv1.Event{Time: start, Source: zdv1.SourceHarness, Type: zdv1.EventAction, Object: "proxy/" + mode, Message: mode + " on"})
		time.Sleep(faultLen)
		end := proxy.set(modePass)
		_ = w.Event(zdv1.Event{Time: end, Source: zdv1.SourceHarness, Type: zdv1.EventAction, Object: "proxy/" + mode, Message: mode + " off"})
		injected = append(injected, window{mode: mode, start: start, end: end})
	}
	time.Sleep(cleanLen)
	sum, err := run.Stop()
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	proxy.close()
	truth, switches := proxy.groundTruth()
	t.Logf("load: %d results at %.0f/s, %d dropped %v", sum.Results, sum.Rate(), sum.Dropped, sum.ErrorClasses)
	for _, s := range switches {
		t.Logf("proxy switched to %s at +%.0fms", s.mode, ms(s.at.Sub(loadStart)))
	}

	// Request by request: what the client recorded must match what the
	// proxy did.
	var mismatches int
	var resultsByID = map[string]zdv1.Result{}
	if _, err := runfile.ReadFile(path, func(rec runfile.Record) error {
		if rec.Result == nil {
			return nil
		}
		r := *rec.Result
		resultsByID[r.ID] = r
		want := map[string]string{outOK: "", outHeld: zdv1.ClassTimeout, out503: "http-503"}[truth[r.ID]]
		got := r.FailureKind()
		switch truth[r.ID] {
		case "", outReset: // never reached the proxy, or reset by it: refused on retry or reset
			if got != zdv1.ClassRefused && got != zdv1.ClassReset {
				want = "refused|reset"
			} else {
				want = got
			}
		}
		if got != want {
			if mismatches++; mismatches <= 10 {
				t.Errorf("request %s sent at +%.0fms: client recorded %q after %.0fms (status %d, %s), proxy ground truth %q",
					r.ID, ms(r.Time.Sub(loadStart)), got, ms(r.Latency), r.Status, r.Error, truth[r.ID])
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if mismatches > 0 {
		t.Fatalf("%d requests disagree with the proxy's ground truth", mismatches)
	}

	sc, err := verdict.AnalyzeFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	res := sc.Results
	var okTruth, held, n503 int64
	for id, out := range truth {
		if _, sent := resultsByID[id]; !sent {
			t.Errorf("proxy saw request %s that is not in the run file", id)
		}
		switch out {
		case outOK:
			okTruth++
		case outHeld:
			held++
		case out503:
			n503++
		}
	}
	if res.Total != sum.Results || res.Total != int64(len(resultsByID)) {
		t.Errorf("report total %d, load summary %d, run file %d", res.Total, sum.Results, len(resultsByID))
	}
	if res.OK != okTruth || res.Dropped != res.Total-okTruth {
		t.Errorf("report ok %d dropped %d; proxy answered %d of %d", res.OK, res.Dropped, okTruth, res.Total)
	}
	if res.ErrorClasses[zdv1.ClassTimeout] != held {
		t.Errorf("report timeouts %d, proxy held %d", res.ErrorClasses[zdv1.ClassTimeout], held)
	}
	if res.StatusCodes["503"] != n503 || res.Non2xx != n503 {
		t.Errorf("report 503s %d (non-2xx %d), proxy answered 503 to %d", res.StatusCodes["503"], res.Non2xx, n503)
	}
	refusedOrReset := res.ErrorClasses[zdv1.ClassRefused] + res.ErrorClasses[zdv1.ClassReset]
	if refusedOrReset != res.Total-okTruth-held-n503 || res.ErrorClasses[zdv1.ClassRefused] == 0 {
		t.Errorf("report refused %d + reset %d, want %d requests the proxy never answered",
			res.ErrorClasses[zdv1.ClassRefused], res.ErrorClasses[zdv1.ClassReset], res.Total-okTruth-held-n503)
	}
	if res.ErrorClasses[zdv1.ClassOther] != 0 || res.ErrorClasses[zdv1.ClassDNS] != 0 {
		t.Errorf("unexpected error classes %v", res.ErrorClasses)
	}

	// Window by window.
	if len(sc.FailureWindows) != len(injected) {
		for _, fw := range sc.FailureWindows {
			t.Log(verdict.WindowText(fw))
		}
		t.Fatalf("report has %d failure windows, proxy injected %d", len(sc.FailureWindows), len(injected))
	}
	wantClass := map[string]string{modeBlackhole: zdv1.ClassTimeout, modeRefuse: zdv1.ClassRefused, mode503: "http-503"}
	for i, in := range injected {
		fw := sc.FailureWindows[i]
		// The window the load could see: from the first request sent once
		// the fault was on to the last one sent before it went off. At 100/s
		// that is within 10 ms of the switches, unless the whole process
		// was frozen (a loaded machine) and sent nothing for a while.
		var first, last time.Time
		for _, r := range resultsByID {
			if !r.Time.Before(in.start) && (first.IsZero() || r.Time.Before(first)) {
				first = r.Time
			}
			if r.Time.Before(in.end) && r.Time.After(last) {
				last = r.Time
			}
		}
		if first.Sub(in.start) > 20*time.Millisecond || in.end.Sub(last) > 20*time.Millisecond {
			t.Logf("%s: the load sent nothing for %v after the fault began or %v before it ended (process stalled)",
				in.mode, first.Sub(in.start), in.end.Sub(last))
		}
		ds, de := fw.Start.Sub(first), fw.End.Sub(last)
		t.Logf("%-9s injected %s-%s (sends %s-%s), found %s (start %+.1fms, end %+.1fms)", in.mode,
			in.start.Format("05.000"), in.end.Format("05.000"), first.Format("05.000"), last.Format("05.000"),
			verdict.WindowText(fw), ms(ds), ms(de))
		// The found window covers every send during the fault and lies
		// within the fault's span, both within the tolerance.
		if ds.Abs() > tolerance || de.Abs() > tolerance {
			t.Errorf("%s window found at %s..%s, injected %s..%s (sends during it %s..%s): off by %v/%v, tolerance %v",
				in.mode, fw.Start, fw.End, in.start, in.end, first, last, ds, de, tolerance)
		}
		if fw.Start.Before(in.start.Add(-tolerance)) || fw.End.After(in.end.Add(tolerance)) {
			t.Errorf("%s window found at %s..%s reaches outside the injected %s..%s by more than %v",
				in.mode, fw.Start, fw.End, in.start, in.end, tolerance)
		}
		// Exact count: every failure in the window is one the proxy caused
		// in this fault's time span.
		var truthCount int64
		for _, r := range resultsByID {
			if !r.OK() && !r.Time.Before(fw.Start) && !r.Time.After(fw.End) {
				truthCount++
			}
		}
		if fw.Failed != truthCount {
			t.Errorf("%s window counts %d failures, the run file has %d in its span", in.mode, fw.Failed, truthCount)
		}
		var dominant string
		for c, n := range fw.Classes {
			if dominant == "" || n > fw.Classes[dominant] {
				dominant = c
			}
		}
		if dominant != wantClass[in.mode] {
			t.Errorf("%s window classes %v, want mostly %s", in.mode, fw.Classes, wantClass[in.mode])
		}
		var sawOn bool
		for _, e := range fw.NearestEvents {
			if e.Object == "proxy/"+in.mode && e.Message == in.mode+" on" {
				sawOn = true
			}
		}
		if !sawOn {
			t.Errorf("%s window's nearest events lack the %q event: %+v", in.mode, in.mode+" on", fw.NearestEvents)
		}
	}
	if held == 0 || n503 == 0 {
		t.Errorf("the proxy held %d requests and answered %d with 503: a fault did not happen", held, n503)
	}
	if sc.Verdict.Status != zdv1.Fail {
		t.Errorf("verdict %s, want FAIL (max dropped 0)", sc.Verdict.Status)
	}
	if r := reasonOf(sc, "dropped"); r == nil || r.Status != zdv1.Fail || len(r.Windows) != 3 {
		t.Errorf("dropped reason %+v", r)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func reasonOf(sc zdv1.Scenario, check string) *zdv1.Reason {
	for i := range sc.Verdict.Reasons {
		if sc.Verdict.Reasons[i].Check == check {
			return &sc.Verdict.Reasons[i]
		}
	}
	return nil
}

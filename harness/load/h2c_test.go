package load_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/load"
)

// An h2c load's requests are streams on few connections, attributed one
// by one as HTTP/1.1's are.
func TestH2CAttributes(t *testing.T) {
	addr := startEcho(t, "echo-a", "node-1")
	sink := &memSink{}
	l, err := load.New(load.WithTargets("http://"+addr+"/"), load.WithRate(100), load.WithDuration(time.Second),
		load.WithTimeout(2*time.Second), load.WithProtocol(zdv1.ProtocolH2C))
	if err != nil {
		t.Fatal(err)
	}
	if p := l.Settings().Protocol; p != zdv1.ProtocolH2C {
		t.Errorf("Settings().Protocol = %q, want %q", p, zdv1.ProtocolH2C)
	}
	sum, err := l.Run(context.Background(), sink)
	if err != nil {
		t.Fatal(err)
	}
	results, events := sink.snapshot()
	if len(results) < 95 || sum.Dropped != 0 {
		t.Fatalf("%d results, %d dropped; want about 100, none dropped", len(results), sum.Dropped)
	}
	conns := map[string]bool{}
	maxReq := 0
	for _, r := range results {
		if !r.OK() || r.Pod != "echo-a" || r.ConnID == "" {
			t.Fatalf("result %+v", r)
		}
		conns[r.ConnID] = true
		maxReq = max(maxReq, r.ConnRequest)
	}
	// At 100/s with answers in well under a millisecond every request
	// finds the one connection free: HTTP/2 opens another only when a
	// connection's streams are all taken.
	if len(conns) > 2 || maxReq < 90 {
		t.Errorf("%d connections, at most %d requests on one; want the requests as streams on one or two", len(conns), maxReq)
	}
	i := slices.IndexFunc(events, func(e zdv1.Event) bool { return e.Type == zdv1.EventLoadStart })
	if i < 0 || events[i].Fields["protocol"] != zdv1.ProtocolH2C {
		t.Errorf("load-start event does not name the protocol: %+v", events)
	}
}

// A server that drains says goodbye with a GOAWAY the run file records,
// before its connections go: the echo server's shutdown notice (2^31-1)
// first, and no stream is refused after it.
func TestH2CGoAwayRecorded(t *testing.T) {
	cfg := echoConfig("echo-a", "node-1")
	cfg.DrainTimeout = 2 * time.Second
	signals := make(chan os.Signal, 1)
	addr := runEcho(t, cfg, signals)
	sink := &memSink{}
	l, err := load.New(load.WithTargets("http://"+addr+"/"), load.WithRate(100),
		load.WithTimeout(time.Second), load.WithProtocol(zdv1.ProtocolH2C))
	if err != nil {
		t.Fatal(err)
	}
	r, err := l.Start(context.Background(), sink)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	signals <- syscall.SIGTERM
	time.Sleep(1500 * time.Millisecond)
	r.Stop()
	if _, err := r.Wait(); err != nil {
		t.Fatal(err)
	}
	results, events := sink.snapshot()
	var goAways []zdv1.Event
	for _, e := range events {
		if e.Type == zdv1.EventGoAway {
			goAways = append(goAways, e)
		}
	}
	if len(goAways) == 0 {
		t.Fatalf("no goaway event after the server drained; events: %+v", events)
	}
	// Go's client closes a connection whose server said GOAWAY once its
	// streams are done (net/http h2_bundle.go, forgetStreamID:
	// closeOnIdle), so after the notice the server's own GOAWAY may never
	// be needed.
	g := goAways[0]
	if g.Source != zdv1.SourceLoad || g.Fields["error_code"] != "NO_ERROR" || g.Fields["last_stream_id"] != "2147483647" ||
		g.Fields["debug"] != "shutdown notice" || !strings.HasPrefix(g.Object, "conn/127.0.0.1:") || g.Fields["remote"] != addr {
		t.Errorf("first goaway event %+v, want the shutdown notice", g)
	}
	for _, res := range results {
		if !res.OK() && res.Time.Before(g.Time) {
			t.Errorf("a request failed before the server's GOAWAY: %+v", res)
		}
		if strings.HasPrefix(res.RetryError, zdv1.ClassGoAwayRefused) {
			t.Errorf("a stream was refused by a GOAWAY despite the notice: %+v", res)
		}
	}
}

package load_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/load"
)

// A server that resets every 5th request of each keep-alive connection after
// reading it: Go's transport re-sends such a GET on a new connection by
// itself (net/http persistConn.shouldRetryRequest). The server's own count
// of the ids it saw is the ground truth: every id it saw twice must be a
// dropped, retried result, and no other.
func TestHiddenRetryIsDropped(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	addr := misbehave(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for n := 1; ; n++ {
			req, err := http.ReadRequest(br)
			if err != nil {
				_ = c.Close()
				return
			}
			id := req.Header.Get(load.RequestIDHeader)
			mu.Lock()
			seen[id]++
			mu.Unlock()
			if n%5 == 0 {
				rst(c)
				return
			}
			body := `{"pod":"p","node":"n","conn_request":` + fmt.Sprint(n) + `}`
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: "+fmt.Sprint(len(body))+"\r\n\r\n"+body); err != nil {
				return
			}
		}
	})
	// Few idle connections and a rate they can carry one by one, so
	// connections are reused and reach their 5th request.
	l, err := load.New(load.WithTargets("http://"+addr+"/"), load.WithRate(100), load.WithDuration(time.Second),
		load.WithConnections(2), load.WithTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	sum, err := l.Run(context.Background(), sink)
	if err != nil {
		t.Fatal(err)
	}
	results, _ := sink.snapshot()
	mu.Lock()
	defer mu.Unlock()
	var twice int
	for _, r := range results {
		switch {
		case seen[r.ID] >= 2:
			twice++
			if r.Retries < 1 || r.FailureKind() != zdv1.ClassRetried || !strings.HasPrefix(r.RetryError, "reset: ") {
				t.Errorf("%s: the server saw it %d times, result says retries %d, kind %q, retry error %q",
					r.ID, seen[r.ID], r.Retries, r.FailureKind(), r.RetryError)
			}
		case r.Retries != 0:
			t.Errorf("%s: marked retried (%q) but the server saw it %d times", r.ID, r.RetryError, seen[r.ID])
		}
	}
	if twice < 10 {
		t.Fatalf("only %d of %d requests were re-sent by the transport; the test did not provoke the retry it is about", twice, len(results))
	}
	if sum.Dropped < int64(twice) || sum.ErrorClasses[zdv1.ClassRetried] != int64(twice) {
		t.Errorf("live tally: dropped %d, retried %d; want at least %d retried and dropped", sum.Dropped, sum.ErrorClasses[zdv1.ClassRetried], twice)
	}
	t.Logf("%d of %d requests re-sent by Go's transport, all counted as dropped", twice, len(results))
}

// A blackhole with a small in-flight cap: once the cap is full, due
// requests are not queued (memory stays bounded) but recorded as unsent.
func TestInFlightCapRecordsUnsent(t *testing.T) {
	addr := misbehave(t, func(c net.Conn) {
		readRequest(c)
		time.Sleep(3 * time.Second)
		_ = c.Close()
	})
	l, err := load.New(load.WithTargets("http://"+addr+"/"), load.WithRate(200), load.WithDuration(time.Second),
		load.WithTimeout(300*time.Millisecond), load.WithMaxInFlight(10))
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	sum, err := l.Run(context.Background(), sink)
	if err != nil {
		t.Fatal(err)
	}
	results, events := sink.snapshot()
	var unsent, capped int64
	for _, e := range events {
		if e.Type == zdv1.EventUnsent {
			var n int64
			_, _ = fmt.Sscan(e.Fields["requests"], &n)
			unsent += n
			switch reason := e.Fields["reason"]; {
			case strings.Contains(reason, "in-flight cap 10 reached"):
				capped += n
			case strings.Contains(reason, "behind its schedule"):
				// A busy machine descheduled the generator, and it said so:
				// the other reason for an unsent request, not a wrong one.
				t.Logf("unsent for the generator's own lag (machine busy): %q", reason)
			default:
				t.Errorf("unsent event reason %q", reason)
			}
		}
	}
	if capped == 0 {
		t.Errorf("no request recorded unsent for the in-flight cap")
	}
	// 200 due; each slot turns over every 300 ms: about 40 sent.
	if sum.Unsent == 0 || unsent != sum.Unsent || int64(len(results))+sum.Unsent != 200 {
		t.Errorf("results %d + unsent %d (events %d), want 200 due in all", len(results), sum.Unsent, unsent)
	}
	for _, r := range results {
		if r.FailureKind() != zdv1.ClassTimeout {
			t.Errorf("%s: %q, want timeout", r.ID, r.FailureKind())
		}
	}
}

// With two targets every result names the one it went to: round-robin by
// sequence number, and each target's own server agrees.
func TestMultiTargetAttribution(t *testing.T) {
	a := startEcho(t, "pod-a", "node-a")
	b := startEcho(t, "pod-b", "node-b")
	results, _ := runLoad(t, load.WithTargets("http://"+a+"/", "http://"+b+"/"), load.WithRate(100), load.WithDuration(500*time.Millisecond))
	if len(results) < 40 {
		t.Fatalf("%d results", len(results))
	}
	for _, r := range results {
		want := []string{"pod-a", "pod-b"}[r.Seq%2]
		if r.Target != int(r.Seq%2) || r.Pod != want {
			t.Errorf("seq %d: target %d, served by %q; want target %d served by %s", r.Seq, r.Target, r.Pod, r.Seq%2, want)
		}
	}
}

// The live tally counts a non-2xx answer as dropped, as the verdict does.
func TestLiveTallyCountsNon2xxAsDropped(t *testing.T) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusServiceUnavailable)
	}), ReadHeaderTimeout: time.Second}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	l, err := load.New(load.WithTargets("http://"+ln.Addr().String()+"/"), load.WithRate(100), load.WithDuration(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := l.Run(context.Background(), &memSink{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Results == 0 || sum.OK != 0 || sum.Dropped != sum.Results || sum.StatusCodes[503] != sum.Results {
		t.Errorf("summary %+v: every 503 must count as dropped", sum)
	}
}

package load_test

import (
	"context"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/load"
	"zerodrop.dev/zerodrop/internal/h2frame"
)

// A gRPC unary load's calls are attributed one by one, as HTTP's requests
// are: status 200 and code OK, the pod and the connection that answered.
func TestGRPCUnaryAttributes(t *testing.T) {
	addr := startEcho(t, "echo-a", "node-1")
	sink := &memSink{}
	l, err := load.New(load.WithTargets("http://"+addr+"/"), load.WithRate(100), load.WithDuration(time.Second),
		load.WithTimeout(2*time.Second), load.WithProtocol(zdv1.ProtocolGRPC))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := l.Run(context.Background(), sink)
	if err != nil {
		t.Fatal(err)
	}
	results, _ := sink.snapshot()
	if len(results) < 95 || sum.Dropped != 0 {
		t.Fatalf("%d results, %d dropped; want about 100, none dropped", len(results), sum.Dropped)
	}
	conns := map[string]bool{}
	reused := 0
	for _, r := range results {
		if !r.OK() || r.Status != 200 || r.GRPCCode != "OK" || r.Pod != "echo-a" || r.ConnID == "" || r.Messages != 0 {
			t.Fatalf("result %+v", r)
		}
		conns[r.ConnID] = true
		if r.Reused {
			reused++
		}
	}
	if len(conns) != 1 || reused < len(results)-1 {
		t.Errorf("%d connections, %d of %d calls on a reused one; want one connection for all", len(conns), reused, len(results))
	}
}

// A stream load's requests are streams, each with the messages it got and
// asked for.
func TestGRPCStreamMessages(t *testing.T) {
	addr := startEcho(t, "echo-a", "node-1")
	sink := &memSink{}
	l, err := load.New(load.WithTargets("http://"+addr+"/"), load.WithRate(20), load.WithDuration(time.Second),
		load.WithTimeout(2*time.Second), load.WithProtocol(zdv1.ProtocolGRPCStream), load.WithStream(5, 20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if s := l.Settings(); s.StreamMessages != 5 || s.StreamIntervalMs != 20 {
		t.Errorf("settings name a stream of %d every %v ms, want 5 every 20", s.StreamMessages, s.StreamIntervalMs)
	}
	if _, err := l.Run(context.Background(), sink); err != nil {
		t.Fatal(err)
	}
	results, _ := sink.snapshot()
	if len(results) < 18 {
		t.Fatalf("%d streams, want about 20", len(results))
	}
	for _, r := range results {
		if !r.OK() || r.Messages != 5 || r.WantMessages != 5 || r.Pod != "echo-a" || r.Latency < 100*time.Millisecond {
			t.Fatalf("stream %+v: want OK, 5 of 5 messages over at least 100 ms", r)
		}
	}
}

// Across the echo server's two ends, as across grpc-go's GracefulStop and
// Stop: the graceful drain sends the shutdown notice and lets every stream
// finish; the hard stop cuts the streams in flight, each a drop that says
// how far it got.
func TestGRPCStreamsAcrossStops(t *testing.T) {
	for _, tc := range []struct {
		name  string
		drain time.Duration
	}{{"graceful", 3 * time.Second}, {"hard", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := echoConfig("echo-a", "node-1")
			cfg.DrainTimeout = tc.drain
			signals := make(chan os.Signal, 1)
			addr := runEcho(t, cfg, signals)
			sink := &memSink{}
			l, err := load.New(load.WithTargets("http://"+addr+"/"), load.WithRate(20), load.WithTimeout(time.Second),
				load.WithProtocol(zdv1.ProtocolGRPCStream), load.WithStream(10, 50*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			r, err := l.Start(context.Background(), sink)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(700 * time.Millisecond)
			signals <- syscall.SIGTERM
			sent := time.Now()
			time.Sleep(200 * time.Millisecond)
			r.Stop()
			if _, err := r.Wait(); err != nil {
				t.Fatal(err)
			}
			results, events := sink.snapshot()
			var cut, whole, notices int
			for _, res := range results {
				if !res.Time.Before(sent) {
					continue // sent after the stop began: whatever the closed port said
				}
				switch {
				case res.OK() && res.Messages == 10:
					whole++
				case res.Messages < res.WantMessages && res.Class != "" && strings.Contains(res.Error, "of 10 messages"):
					cut++
				default:
					t.Errorf("stream sent before the stop: %+v", res)
				}
			}
			for _, e := range events {
				if e.Type == zdv1.EventGoAway && e.Fields["last_stream_id"] == "2147483647" {
					notices++
				}
			}
			switch {
			case tc.drain > 0 && (cut != 0 || notices == 0):
				t.Errorf("graceful: %d streams cut, %d whole, %d shutdown notices; want none cut, the notice sent", cut, whole, notices)
			case tc.drain == 0 && cut == 0:
				t.Errorf("hard: %d streams cut, %d whole; want the streams in flight cut", cut, whole)
			}
		})
	}
}

// A call whose stream a GOAWAY refused is sent again by grpc-go on its
// own (a transparent retry, gRFC A6): the load counts it as dropped and
// names the GOAWAY as the cause. The target's first connection reads the
// call's HEADERS and answers GOAWAY naming stream 0; later connections
// reach the echo server.
func TestGRPCTransparentRetryCounted(t *testing.T) {
	echoAddr := startEcho(t, "echo-a", "node-1")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last first: the listener closes, then its goroutines
	// are waited for.
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	t.Cleanup(func() { ln.Close() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				if i == 0 {
					refuseFirstStream(c)
					return
				}
				up, err := net.Dial("tcp", echoAddr)
				if err != nil {
					return
				}
				defer up.Close()
				go func() { _, _ = io.Copy(up, c); up.Close() }()
				_, _ = io.Copy(c, up)
			}()
		}
	}()
	results, events := runLoad(t, load.WithTargets("http://"+ln.Addr().String()+"/"), load.WithRate(1), load.WithDuration(time.Second),
		load.WithTimeout(3*time.Second), load.WithProtocol(zdv1.ProtocolGRPC))
	if len(results) != 1 {
		t.Fatalf("%d results, want 1", len(results))
	}
	r := results[0]
	if r.Retries != 1 || r.OK() || r.FailureKind() != zdv1.ClassRetried || r.Pod != "echo-a" ||
		!strings.HasPrefix(r.RetryError, zdv1.ClassGoAwayRefused+": the server's GOAWAY (last stream 0, NO_ERROR)") {
		t.Errorf("result %+v; want answered by echo-a after one retry, dropped as retried, the GOAWAY its cause", r)
	}
	goAways := 0
	for _, e := range events {
		if e.Type == zdv1.EventGoAway && e.Fields["last_stream_id"] == "0" {
			goAways++
		}
	}
	if goAways != 1 {
		t.Errorf("%d goaway events naming stream 0, want 1: %+v", goAways, events)
	}
}

// refuseFirstStream plays an HTTP/2 server that reads the client's first
// HEADERS and answers with GOAWAY naming stream 0: it processed none.
func refuseFirstStream(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	preface := make([]byte, len(h2frame.ClientPreface))
	if _, err := io.ReadFull(c, preface); err != nil {
		return
	}
	// An empty SETTINGS: the server's preface (RFC 9113, section 3.4).
	if _, err := c.Write([]byte{0, 0, 0, 0x4, 0, 0, 0, 0, 0}); err != nil {
		return
	}
	headers := make(chan struct{})
	var once sync.Once
	sc := &h2frame.Scanner{OnFrame: func(f h2frame.Frame) {
		if f.Type == h2frame.TypeHeaders {
			once.Do(func() { close(headers) })
		}
	}}
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		sc.Feed(buf[:n])
		select {
		case <-headers:
			_, _ = c.Write(h2frame.AppendGoAway(nil, 0, 0, "refused"))
			time.Sleep(100 * time.Millisecond)
			return
		default:
		}
		if err != nil {
			return
		}
	}
}

// A gRPC load with a stream every k requests makes unary calls and opens
// streams on the same connection.
func TestGRPCMixedCalls(t *testing.T) {
	addr := startEcho(t, "echo-a", "node-1")
	sink := &memSink{}
	l, err := load.New(load.WithTargets("http://"+addr+"/"), load.WithRate(40), load.WithDuration(time.Second),
		load.WithTimeout(2*time.Second), load.WithProtocol(zdv1.ProtocolGRPC), load.WithStreamEvery(4), load.WithStream(3, 10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if s := l.Settings(); s.StreamEvery != 4 || s.StreamMessages != 3 {
		t.Errorf("settings: a stream every %d of %d messages, want every 4 of 3", s.StreamEvery, s.StreamMessages)
	}
	if _, err := l.Run(context.Background(), sink); err != nil {
		t.Fatal(err)
	}
	results, _ := sink.snapshot()
	var streams, unary int
	conns := map[string]bool{}
	for _, r := range results {
		switch {
		case !r.OK():
			t.Fatalf("result %+v", r)
		case r.WantMessages == 3 && r.Messages == 3:
			streams++
		case r.WantMessages == 0 && r.Messages == 0:
			unary++
		default:
			t.Fatalf("result %+v: neither a whole stream nor a unary call", r)
		}
		conns[r.ConnID] = true
	}
	if streams < 9 || streams > 11 || unary < 28 || len(conns) != 1 {
		t.Errorf("%d streams, %d unary calls on %d connections; want 10 and 30 on one", streams, unary, len(conns))
	}
}

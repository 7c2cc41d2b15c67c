package echo

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"
)

// The traffic handler is measured next to a minimal net/http "hello"
// handler, both served by a real http.Server on loopback and driven by the
// same raw keep-alive client, so the two figures differ only by what the
// servers do. Run:
//
//	go test -run '^$' -bench . -benchmem ./echo-server/echo/
//
// BenchmarkEchoVsHello interleaves the two in small chunks so that load
// from other processes falls on both alike, and reports hello-ns/req,
// echo-ns/req and echo/hello (throughput ratio; the target is >= 0.8).

// helloServer is the reference: the least a net/http server can do.
func helloServer() *http.Server {
	return &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("hello\n"))
	})}
}

func echoServer(b *testing.B) *http.Server {
	s, err := newServer(testConfig(), slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	return s.trafficServer()
}

// serveLoopback serves srv on a loopback port until the benchmark ends.
func serveLoopback(b *testing.B, srv *http.Server) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			b.Errorf("benchmark server: %v", err)
		}
	}()
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return l.Addr().String()
}

// benchClient is one keep-alive connection sending the same request.
type benchClient struct {
	c   net.Conn
	br  *bufio.Reader
	req []byte
	buf []byte
}

func newBenchClient(b testing.TB, addr string) *benchClient {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return &benchClient{
		c:   c,
		br:  bufio.NewReaderSize(c, 4096),
		req: []byte("GET / HTTP/1.1\r\nHost: bench\r\nUser-Agent: zerodrop-bench\r\nX-Request-Id: 7c9e6679-7425-40de-944b-e07fc1f66afe\r\n\r\n"),
		buf: make([]byte, 4096),
	}
}

func (bc *benchClient) roundTrip() error {
	if _, err := bc.c.Write(bc.req); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bc.br, nil)
	if err != nil {
		return err
	}
	_, err = io.CopyBuffer(io.Discard, resp.Body, bc.buf)
	resp.Body.Close()
	if err == nil && resp.StatusCode != http.StatusOK {
		err = errors.New(resp.Status)
	}
	return err
}

func BenchmarkServe(b *testing.B) {
	for _, tt := range []struct {
		name string
		srv  func(*testing.B) *http.Server
	}{
		{"hello", func(*testing.B) *http.Server { return helloServer() }},
		{"echo", echoServer},
	} {
		b.Run(tt.name+"/serial", func(b *testing.B) {
			bc := newBenchClient(b, serveLoopback(b, tt.srv(b)))
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.roundTrip(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tt.name+"/parallel", func(b *testing.B) {
			addr := serveLoopback(b, tt.srv(b))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				bc := newBenchClient(b, addr)
				for pb.Next() {
					if err := bc.roundTrip(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func BenchmarkEchoVsHello(b *testing.B) {
	hello := newBenchClient(b, serveLoopback(b, helloServer()))
	echo := newBenchClient(b, serveLoopback(b, echoServer(b)))
	const chunk = 50
	var tHello, tEcho time.Duration
	n := 0
	for b.Loop() {
		// One b.Loop iteration is one request to each server, taken in
		// chunks: alternating per request would measure cache thrash.
		if n%chunk == 0 {
			t0 := time.Now()
			for range chunk {
				if err := hello.roundTrip(); err != nil {
					b.Fatal(err)
				}
			}
			t1 := time.Now()
			for range chunk {
				if err := echo.roundTrip(); err != nil {
					b.Fatal(err)
				}
			}
			tHello += t1.Sub(t0)
			tEcho += time.Since(t1)
		}
		n++
	}
	reqs := float64((n + chunk - 1) / chunk * chunk)
	b.ReportMetric(float64(tHello.Nanoseconds())/reqs, "hello-ns/req")
	b.ReportMetric(float64(tEcho.Nanoseconds())/reqs, "echo-ns/req")
	b.ReportMetric(float64(tHello)/float64(tEcho), "echo/hello")
}

// BenchmarkHandler is the handlers alone, without sockets or HTTP parsing:
// what the echo handler costs over hello in absolute terms.
func BenchmarkHandler(b *testing.B) {
	s, err := newServer(testConfig(), slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	ctx := s.connContext(context.Background(), &tcpAddrConn{Conn: c1})
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://bench/", nil)
	req.RemoteAddr = "127.0.0.1:40000"
	req.Header.Set("X-Request-Id", "7c9e6679-7425-40de-944b-e07fc1f66afe")
	hello := helloServer().Handler
	for _, tt := range []struct {
		name string
		h    http.Handler
	}{{"hello", hello}, {"echo", s}} {
		b.Run(tt.name, func(b *testing.B) {
			w := &nullWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				tt.h.ServeHTTP(w, req)
			}
		})
	}
}

// tcpAddrConn gives a pipe a TCP peer address, as connContext expects.
type tcpAddrConn struct{ net.Conn }

func (tcpAddrConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}

package load

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/internal/h2frame"
)

// RequestIDHeader carries the unique id of every request.
const RequestIDHeader = "X-Request-Id"

// newTransport is the load's HTTP client for c's protocol. With h2c every
// connection's frames pass a goAwayScanner, which tells onGoAway of each
// GOAWAY its server sends.
func newTransport(c *config, onGoAway func(net.Conn, h2frame.GoAway)) *http.Transport {
	dialer := net.Dialer{Timeout: c.timeout, KeepAlive: 30 * time.Second}
	if !c.keepAlive {
		dialer.KeepAlive = -1
	}
	// Every new connection's local port comes from the cycle (Ports): the
	// kernel's own choice reuses a 4-tuple within seconds.
	dial := c.ports.Dialer(dialer)
	h2c := c.protocol == zdv1.ProtocolH2C
	tr := &http.Transport{
		Proxy: nil, // never route load through an environment proxy
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			tc := &trackedConn{Conn: conn}
			if h2c {
				tc.frames = goAwayScanner(func(g h2frame.GoAway) {
					tc.goAway.Store(&g)
					if onGoAway != nil {
						onGoAway(conn, g)
					}
				})
			}
			return tc, nil
		},
		MaxIdleConnsPerHost: c.connections,
		MaxConnsPerHost:     c.maxConnections,
		IdleConnTimeout:     c.idleTimeout,
		DisableKeepAlives:   !c.keepAlive,
		DisableCompression:  true,
		// Requests are a few hundred bytes and the echo server's answers
		// under 1 KiB; net/http's 4 KiB defaults cost 8 KiB per open
		// connection, and a saturated target holds up to the in-flight cap
		// of them. Longer answers are still read whole, in more reads.
		ReadBufferSize:  2048,
		WriteBufferSize: 1024,
		// HTTP/1.1 unless h2c is asked for: keep-alive behaviour per
		// connection is part of what is measured, so TLS never upgrades
		// a load to HTTP/2 by itself.
		ForceAttemptHTTP2: false,
		TLSNextProto:      map[string]func(string, *tls.Conn) http.RoundTripper{},
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: c.insecure, MinVersion: tls.VersionTLS12}, //nolint:gosec // opt-in for self-signed test targets
	}
	if h2c {
		// HTTP/2 alone on http:// URLs: prior knowledge, no HTTP/1.1
		// upgrade (net/http Protocols, Go 1.24).
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
		// Every request carries its own id, and HPACK indexes every field
		// that fits its dynamic table (x/net/http2/hpack, shouldIndex), so
		// each request's id entered the table and pushed the oldest out:
		// 12 % of the generator's CPU at 20,000/s (pprof, one core). A
		// table of one byte indexes nothing; a request's HEADERS carry
		// literals, some tens of bytes more.
		tr.HTTP2 = &http.HTTP2Config{MaxEncoderHeaderTableSize: 1}
	}
	return tr
}

// trackedConn remembers the last error its connection met, so that when the
// transport silently retries a request on a new connection, the result can
// say what broke the first one.
type trackedConn struct {
	net.Conn
	err atomic.Pointer[error]
	// frames, on an HTTP/2 connection, reads the server's frames as they
	// pass; only the connection's reader calls Read.
	frames *h2frame.Scanner
	// goAway is the last GOAWAY the server sent on it, if any.
	goAway atomic.Pointer[h2frame.GoAway]
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.frames != nil {
		c.frames.Feed(p[:n])
	}
	if err != nil {
		c.err.Store(&err)
	}
	return n, err
}

func (c *trackedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err != nil {
		c.err.Store(&err)
	}
	return n, err
}

// lastErr is the connection's last read or write error, if any.
func (c *trackedConn) lastErr() error {
	if p := c.err.Load(); p != nil {
		return *p
	}
	return nil
}

// whyLeft is why a request this connection carried was sent again on
// another: the server's GOAWAY naming a last stream (goAwayRefused), that
// is why its streams went elsewhere, whatever the connection met after
// it; else the connection's last error (nil: neither). A shutdown notice
// (2^31-1) refuses none, so it is never the cause.
func (c *trackedConn) whyLeft() error {
	if g := c.goAway.Load(); g != nil && g.LastStreamID < h2frame.MaxStreamID {
		return &goAwayRefused{g: *g}
	}
	return c.lastErr()
}

// setRetries writes a request's hidden re-sends into its result: the
// attempts beyond the first, and what the first met.
func setRetries(res *zdv1.Result, attempts int, cause error) {
	if attempts > 1 {
		res.Retries = attempts - 1
		res.RetryError = Classify(cause) + ": " + cause.Error()
	}
}

// connOf unwraps a TLS connection to the tracked one under it.
func connOf(c net.Conn) *trackedConn {
	if tc, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = tc.NetConn()
	}
	t, _ := c.(*trackedConn)
	return t
}

// attempt follows one request through the transport: every connection
// that carried it (more than one means the transport retried on its own)
// and the error that made it give up on the previous one.
type attempt struct {
	mu    sync.Mutex
	conns int
	// wrote: the request's headers went to the current connection.
	wrote    bool
	reused   bool
	prev     *trackedConn
	retryErr error
}

func (a *attempt) gotConn(info httptrace.GotConnInfo) {
	a.mu.Lock()
	defer a.mu.Unlock()
	// A connection the transport gave up on before it wrote the request
	// did not carry it, and taking the next one is no re-send: an HTTP/2
	// connection whose GOAWAY arrived between the pool's pick and the
	// request's stream (net/http h2_bundle.go,
	// awaitOpenSlotForStreamLocked: errClientConnUnusable, retried by
	// RoundTripOpt).
	if a.conns == 0 || a.wrote {
		a.conns++
	}
	if a.conns > 1 && a.retryErr == nil {
		a.retryErr = errors.New("the previous attempt's connection broke before a response")
		if a.prev != nil {
			if err := a.prev.whyLeft(); err != nil {
				a.retryErr = err
			}
		}
	}
	a.wrote = false
	a.reused = info.Reused
	a.prev = connOf(info.Conn)
}

func (a *attempt) wroteHeaders() {
	a.mu.Lock()
	a.wrote = true
	a.mu.Unlock()
}

// roundTripper sends one request and measures it: the per-request timeout
// with a cause we can recognise, errors classified from the error chain
// before they are flattened to text, and the transport's own retries.
type roundTripper struct {
	base    *http.Transport
	targets []*url.URL
	// lanes, when set, take the requests in turn (WithRotation), one
	// connection per target each.
	lanes   []*http.Transport
	next    atomic.Uint64
	timeout time.Duration
	host    string
	bufs    sync.Pool
}

// transport is the one the next request goes through: the next lane in
// turn, or the shared pool.
func (rt *roundTripper) transport() *http.Transport {
	if len(rt.lanes) == 0 {
		return rt.base
	}
	return rt.lanes[(rt.next.Add(1)-1)%uint64(len(rt.lanes))]
}

// sender sends the load's requests, one protocol's way.
type sender interface {
	// do sends a request to target (an index into the load's targets)
	// with the given request id and returns its result (not yet
	// numbered: the caller sets Seq, Target and Lag).
	do(ctx context.Context, target int, id string) zdv1.Result
	// close lets go of the connections once no request is in flight.
	close()
}

func (rt *roundTripper) close() {
	rt.base.CloseIdleConnections()
	for _, l := range rt.lanes {
		l.CloseIdleConnections()
	}
}

// do sends a GET to the target with the given request id (sender).
func (rt *roundTripper) do(parent context.Context, target int, id string) zdv1.Result {
	u := rt.targets[target]
	var a attempt
	ctx, cancel := context.WithTimeoutCause(parent, rt.timeout, errRequestTimeout)
	defer cancel()
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: a.gotConn, WroteHeaders: a.wroteHeaders})
	uc := *u
	req := &http.Request{
		Method:     http.MethodGet,
		URL:        &uc,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     http.Header{RequestIDHeader: []string{id}},
		Host:       rt.host,
	}
	req = req.WithContext(ctx)

	res := zdv1.Result{ID: id, Time: time.Now()}
	resp, err := rt.transport().RoundTrip(req)
	var body []byte
	if err == nil {
		res.Status = resp.StatusCode
		bp := rt.buffer()
		body, err = readBody(resp.Body, *bp)
		*bp = body[:0]
		defer rt.bufs.Put(bp)
	}
	res.Latency = time.Since(res.Time)

	a.mu.Lock()
	res.Reused = a.reused
	setRetries(&res, a.conns, a.retryErr)
	a.mu.Unlock()

	if err != nil {
		// A failure reading the body is a failure of the request, whatever
		// status line came before it.
		res.Status = 0
		res.Class = classifyAttempt(ctx, err)
		res.Error = err.Error()
		return res
	}
	attribute(&res, body)
	attributeFront(&res, resp.Header)
	if res.Status < 200 || res.Status > 299 {
		// An answer that is not a success says who gave it as far as it
		// can: the echo server's pod header, and the body's first line
		// (a 404 from something that is not the workload at all).
		if res.Pod == "" {
			res.Pod = resp.Header.Get("X-Echo-Pod")
		}
		res.Error = "answered: " + firstLine(body, 120)
	}
	return res
}

// firstLine is b's first line, at most n bytes, as text.
func firstLine(b []byte, n int) string {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	if len(b) > n {
		b = b[:n]
	}
	return strings.ToValidUTF8(strings.TrimSpace(string(b)), "?")
}

func (rt *roundTripper) buffer() *[]byte {
	if bp, ok := rt.bufs.Get().(*[]byte); ok {
		return bp
	}
	b := make([]byte, 0, 1024)
	return &b
}

// readBody reads up to maxBody bytes of the body into buf, discards the rest
// (so the connection can be reused) and closes it.
func readBody(rc io.ReadCloser, buf []byte) ([]byte, error) {
	defer rc.Close()
	buf = buf[:0]
	for len(buf) < maxBody {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := rc.Read(buf[len(buf):min(cap(buf), maxBody)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
	_, err := io.Copy(io.Discard, rc)
	return buf, err
}

package load

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// seqHeader is set by the vegeta attacker on every request; it links the
// request our RoundTripper sees to the vegeta Result that comes out.
const seqHeader = "X-Vegeta-Seq"

// RequestIDHeader carries the unique id of every request.
const RequestIDHeader = "X-Request-Id"

// attempt is what the RoundTripper learns about one request that vegeta's
// Result cannot carry: the id sent, the error chain's class, and whether the
// connection was reused.
type attempt struct {
	id     string
	reused atomic.Bool
	mu     sync.Mutex
	class  string
}

func (a *attempt) fail(class string) {
	a.mu.Lock()
	if a.class == "" {
		a.class = class
	}
	a.mu.Unlock()
}

func (a *attempt) errClass() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.class
}

// attempts maps vegeta sequence numbers to attempts. Entries live only
// between RoundTrip and the consumer reading the Result, so its size is the
// number of requests in flight and memory stays flat over a long run.
type attempts struct {
	mu sync.Mutex
	m  map[uint64]*attempt
}

func (t *attempts) put(seq uint64, a *attempt) {
	t.mu.Lock()
	t.m[seq] = a
	t.mu.Unlock()
}

func (t *attempts) take(seq uint64) *attempt {
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.m[seq]
	delete(t.m, seq)
	return a
}

// roundTripper stamps the request id, enforces the per-request timeout with
// a cause we can recognise, and classifies errors from the error chain
// before net/http and vegeta flatten them to text.
type roundTripper struct {
	base     *http.Transport
	timeout  time.Duration
	runID    string
	attempts *attempts
}

func newTransport(c *config) *http.Transport {
	dialer := &net.Dialer{Timeout: c.timeout, KeepAlive: 30 * time.Second}
	if !c.keepAlive {
		dialer.KeepAlive = -1
	}
	return &http.Transport{
		Proxy:               nil, // never route load through an environment proxy
		DialContext:         dialer.DialContext,
		MaxIdleConnsPerHost: c.connections,
		MaxConnsPerHost:     c.maxConnections,
		IdleConnTimeout:     90 * time.Second,
		DisableKeepAlives:   !c.keepAlive,
		DisableCompression:  true,
		// HTTP/1.1 only: keep-alive behaviour per connection is part of
		// what is measured.
		ForceAttemptHTTP2: false,
		TLSNextProto:      map[string]func(string, *tls.Conn) http.RoundTripper{},
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: c.insecure, MinVersion: tls.VersionTLS12}, //nolint:gosec // opt-in for self-signed test targets
	}
}

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	seqText := req.Header.Get(seqHeader)
	seq, err := strconv.ParseUint(seqText, 10, 64)
	if err != nil {
		return nil, errors.New("zerodrop load: request without a vegeta sequence number")
	}
	a := &attempt{id: rt.runID + "-" + seqText}
	rt.attempts.put(seq, a)
	// vegeta builds a fresh header map per request, so setting the id here
	// touches nothing shared.
	req.Header.Set(RequestIDHeader, a.id)

	ctx, cancel := context.WithTimeoutCause(req.Context(), rt.timeout, errRequestTimeout)
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) { a.reused.Store(info.Reused) },
	})
	resp, err := rt.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		a.fail(classifyAttempt(ctx, err))
		cancel()
		return nil, err
	}
	resp.Body = &trackedBody{rc: resp.Body, ctx: ctx, cancel: cancel, a: a}
	return resp, nil
}

// trackedBody keeps the request's deadline running until the body is read
// and closed, and classifies read errors (a reset mid-body, a timeout).
type trackedBody struct {
	rc     io.ReadCloser
	ctx    context.Context
	cancel context.CancelFunc
	a      *attempt
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		b.a.fail(classifyAttempt(b.ctx, err))
	}
	return n, err
}

func (b *trackedBody) Close() error {
	err := b.rc.Close()
	b.cancel()
	return err
}

// Package load generates constant-rate HTTP load and attributes every
// result: send time and how late it was sent, latency, status, error class,
// hidden client retries, and the identity the echo server reports (pod, node,
// client IP, readiness, draining, connection id and reuse).
//
// Results are handed to a ResultSink (a *runfile.Writer) one by one as they
// complete; nothing per-request is kept in memory, so a long run stays flat.
// A load runs for a fixed duration or, with duration 0, until its context is
// cancelled or Stop is called, so a scenario can start load, act on the
// cluster and then stop it.
//
// Every request carries a unique X-Request-Id "<run id>-<seq>" (gRPC: the
// x-request-id metadata). Connections are HTTP/1.1 unless WithProtocol
// asks for h2c or gRPC; environment proxies are ignored.
//
// # What the instrument promises
//
// The load is open-loop: request n is due at start + n/rate whatever the
// target does, so a blackhole shows as timeouts, not as a sagging rate. The
// pacing is vegeta's ConstantPacer. Three things would let a measurement
// claim more than it saw, and each is recorded instead:
//
//   - A request sent late (the generator was descheduled, stopped or short
//     of CPU) records its lag; one that would go out later than the lag
//     bound (zdv1.LoadSettings.SendLagBound) is not sent at all, since
//     a catch-up burst would hide the stall, and the gap is written as an
//     "unsent" event.
//   - Requests in flight are capped (WithMaxInFlight): memory stays bounded
//     whatever rate is asked, and a request due while the cap is full is
//     unsent too.
//   - Go's transport re-sends an idempotent request on a new connection
//     when a reused one fails after the request was written
//     (net/http/transport.go, persistConn.shouldRetryRequest). A client
//     without that retry saw a failure, and on a cluster the retry often
//     hides a pod killed mid-request, so every retry is recorded on the
//     result with the error that caused it and the request counts as
//     dropped (zdv1.ClassRetried).
//
// The verdict (harness/verdict) turns lags, unsent spans and the sends per
// second into a "load" check that no run passes with gaps.
package load

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/runfile"
	"zerodrop.dev/zerodrop/internal/echoproto"
	"zerodrop.dev/zerodrop/internal/h2frame"
	"zerodrop.dev/zerodrop/internal/sched"
)

// Defaults.
const (
	// DefaultConnections is vegeta's idle pool per host (lib.DefaultConnections,
	// 10000): a smaller pool closes every connection above it after one
	// request and dials a new one for the next, which at 10k/s cost 15 %
	// of the generator's CPU in dials alone. The in-flight cap bounds the
	// connections actually open.
	DefaultConnections = vegeta.DefaultConnections
	DefaultTimeout     = 5 * time.Second
	// DefaultIdleTimeout is how long a keep-alive connection may sit idle
	// in the pool before the generator closes it. It must be shorter than
	// the close grace of the servers it measures: a server that closes an
	// idle connection races the client's next request on it (RFC 9112,
	// section 9.3.1), and Go's Transport re-sends such a GET on its own,
	// which the run counts as dropped. With a pool that is a stack (Go's
	// Transport reuses the most recently idle connection first), the
	// bottom connections to a draining Pod stay idle through its whole
	// grace; closing them from the client side after 3 s, inside the echo
	// server's 5 s close grace, leaves the server none to close. Go's own
	// default, 90 s, is longer than any drain.
	DefaultIdleTimeout = 3 * time.Second
	// DefaultMaxInFlight bounds the requests in flight, and so the open
	// connections. Each costs some tens of KiB (a goroutine, a connection's
	// two loops and buffers), so 1024 keeps the generator under 100 MB
	// whatever rate is asked; it covers a full blackhole of 200/s for a 5 s
	// timeout (the suite runs 200/s with a 2 s timeout: 400 at most).
	DefaultMaxInFlight = 1024
	// maxBody bounds how much of each response is kept for attribution;
	// the echo reply is a few hundred bytes.
	maxBody = 64 << 10
	// resultBuffer decouples the requests from the sink; when the sink
	// falls behind, requests hold their in-flight slot and the cap shows it.
	resultBuffer = 4096
)

// ErrInterrupted is returned when a fixed-duration load was stopped before
// its duration was up (context cancelled or Stop called).
var ErrInterrupted = errors.New("load interrupted before its duration was up")

// ErrAborted is returned when Abort gave up on the requests in flight.
var ErrAborted = errors.New("load aborted: requests in flight were abandoned")

// ResultSink receives every result as it completes. *runfile.Writer is one.
// It is called from a single goroutine.
type ResultSink interface {
	Result(zdv1.Result) error
}

// ResultFunc adapts a function to ResultSink.
type ResultFunc func(zdv1.Result) error

// Result calls f(r).
func (f ResultFunc) Result(r zdv1.Result) error { return f(r) }

type config struct {
	targets        []string
	host           string
	rate           int
	duration       time.Duration
	connections    int
	maxConnections int
	keepAlive      bool
	protocol       string
	messages       int
	interval       time.Duration
	streamEvery    int
	timeout        time.Duration
	idleTimeout    time.Duration
	rotate         int
	insecure       bool
	maxInFlight    int
	maxLag         time.Duration
	runID          string
	events         zdv1.EventSink
	pauses         *PauseWatch
	ports          *Ports
}

// Option configures a Load.
type Option func(*config)

// WithTargets sets the URLs to load, round-robin. Required.
func WithTargets(urls ...string) Option {
	return func(c *config) { c.targets = append([]string(nil), urls...) }
}

// WithHost sets the Host header of every request.
func WithHost(host string) Option { return func(c *config) { c.host = host } }

// WithRate sets requests per second. Required.
func WithRate(perSecond int) Option { return func(c *config) { c.rate = perSecond } }

// WithDuration sets how long the load runs. Zero (the default) runs until
// the context is cancelled or Stop is called.
func WithDuration(d time.Duration) Option { return func(c *config) { c.duration = d } }

// WithConnections sets how many idle keep-alive connections per target host
// are kept for reuse (default DefaultConnections), like vegeta's -connections.
func WithConnections(n int) Option { return func(c *config) { c.connections = n } }

// WithMaxConnections caps the connections per target host, open or idle;
// 0 (default) means no cap. Requests beyond it wait for a connection.
func WithMaxConnections(n int) Option { return func(c *config) { c.maxConnections = n } }

// WithKeepAlive turns connection reuse on (default) or off.
func WithKeepAlive(on bool) Option { return func(c *config) { c.keepAlive = on } }

// WithProtocol sets how requests travel: zdv1.ProtocolHTTP1 (the
// default: HTTP/1.1, one request at a time on a connection) or
// zdv1.ProtocolH2C (HTTP/2 over cleartext TCP with prior knowledge, RFC
// 9113 section 3.3: the requests of a connection are streams on it, and a
// server ends it with GOAWAY, which the load records as an event).
//
// zdv1.ProtocolGRPC calls the echo server's gRPC service (internal/echoproto)
// once per request, and zdv1.ProtocolGRPCStream opens one of its streams
// per request (WithStream), both with grpc-go's client over h2c.
// zdv1.ProtocolWebSocket opens a WebSocket session on the echo server's
// route per request (WithStream) and reads it to the server's close.
func WithProtocol(p string) Option { return func(c *config) { c.protocol = p } }

// Shape is a load's form beyond its protocol and rate: how many of its
// requests are streams, and how long those are.
type Shape struct {
	// StreamEvery: one request in StreamEvery is a stream
	// (WithStreamEvery; zdv1.ProtocolGRPC only).
	StreamEvery int
	// Messages and Interval: each stream's or session's length
	// (WithStream); 0: the load's default.
	Messages int
	Interval time.Duration
}

// MatrixShape is the shape of the matrix's cells of a protocol, here so
// that the suites and the bench that weighs them (cmd/loadbench --costs)
// load alike:
//
//   - gRPC: a client of a service with both kinds of methods, one request
//     in five a server stream of ten messages a tenth of a second apart;
//   - WebSocket: a live feed's session, ten messages 300 ms apart, three
//     seconds: sessions that outlive the requests around them, without a
//     message volume that would make the cell a throughput test.
func MatrixShape(protocol string) Shape {
	switch protocol {
	case zdv1.ProtocolGRPC:
		return Shape{StreamEvery: 5}
	case zdv1.ProtocolWebSocket:
		return Shape{Messages: 10, Interval: 300 * time.Millisecond}
	}
	return Shape{}
}

// Options are the load options that give a load the shape.
func (s Shape) Options() []Option {
	var o []Option
	if s.StreamEvery > 0 {
		o = append(o, WithStreamEvery(s.StreamEvery))
	}
	if s.Messages > 0 {
		o = append(o, WithStream(s.Messages, s.Interval))
	}
	return o
}

// Flags are the zerodrop load flags that give a load the shape.
func (s Shape) Flags() []string {
	var f []string
	if s.StreamEvery > 0 {
		f = append(f, "--stream-every", strconv.Itoa(s.StreamEvery))
	}
	if s.Messages > 0 {
		f = append(f, "--stream-messages", strconv.Itoa(s.Messages), "--stream-interval", s.Interval.String())
	}
	return f
}

// WithStreamEvery has a zdv1.ProtocolGRPC load open a stream (WithStream)
// instead of a unary call for one request in every k (0, the default:
// none), on the same connections: a client of a service with both kinds
// of methods.
func WithStreamEvery(k int) Option { return func(c *config) { c.streamEvery = k } }

// WithStream sets a zdv1.ProtocolGRPCStream request's stream, or a
// zdv1.ProtocolWebSocket request's session: n messages,
// the server pausing every before each (default echoproto.DefaultMessages,
// echoproto.DefaultInterval). The request's timeout bounds the stream
// beyond its own length (n x every).
func WithStream(n int, every time.Duration) Option {
	return func(c *config) { c.messages, c.interval = n, every }
}

// WithTimeout sets the per-request timeout, connect to last body byte
// (default 5s). A request that exceeds it is a "timeout" failure.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithRotation keeps n kept-alive connections per target and sends each
// request on the next of them in turn (0, the default: Go's pool). Go's
// pool hands out the most recently used idle connection first, so at a
// steady rate one connection carries almost everything and the rest idle
// out; a proxy spreading requests over its pool, or a client with a
// round-robin pool, keeps every connection busy, and which Pods those
// connections reach stays what kube-proxy chose when each was opened.
// Rotation needs keep-alive; a request waits for its connection while
// the one before it on that connection is in flight.
func WithRotation(n int) Option { return func(c *config) { c.rotate = n } }

// WithIdleTimeout sets how long an idle keep-alive connection is kept
// before the generator closes it (default DefaultIdleTimeout).
func WithIdleTimeout(d time.Duration) Option { return func(c *config) { c.idleTimeout = d } }

// WithInsecureTLS skips certificate verification for https targets.
func WithInsecureTLS() Option { return func(c *config) { c.insecure = true } }

// WithMaxInFlight caps the requests in flight (default DefaultMaxInFlight).
// A request due while the cap is full is not sent and is recorded as
// unsent, which the verdict does not pass.
func WithMaxInFlight(n int) Option { return func(c *config) { c.maxInFlight = n } }

// WithMaxSendLag sets the send-lag bound (default: three inter-request
// intervals, at least 50 ms; see zdv1.LoadSettings.SendLagBound). A
// request that would leave later than this after its due time is not sent.
func WithMaxSendLag(d time.Duration) Option { return func(c *config) { c.maxLag = d } }

// WithRunID sets the request-id prefix (default: a random id).
func WithRunID(id string) Option { return func(c *config) { c.runID = id } }

// WithEvents records the load's start, stop and unsent spans as events.
// Without it, a result sink that is also an EventSink (a *runfile.Writer)
// gets them.
func WithEvents(sink zdv1.EventSink) Option { return func(c *config) { c.events = sink } }

// WithPorts sets the cycle of local ports new connections take (Ports);
// without it a load makes its own. Share one between the loads of a
// process, so an address a later target gets continues the earlier cycle.
func WithPorts(p *Ports) Option { return func(c *config) { c.ports = p } }

// WithPauseWatch has the load record the process's pauses from w, which
// other loads of the process may share (one sampling for all); without it
// the load watches on its own.
func WithPauseWatch(w *PauseWatch) Option { return func(c *config) { c.pauses = w } }

// Bounds of a load's settings: beyond them a setting is a mistake (a
// rate whose interval rounds to nothing, a run of months), refused with a
// message rather than run.
const (
	MaxRate     = 100_000
	MaxDuration = 7 * 24 * time.Hour
	MaxTimeout  = 5 * time.Minute
	// MaxRotation bounds WithRotation: each lane is a transport of its own.
	MaxRotation = 1024
)

// Load is a validated load configuration. Start (or Run) it once.
type Load struct {
	cfg     config
	targets []*url.URL
	started atomic.Bool
	// scheduling is the process's CPU scheduling when the load was made
	// (sched.Raise), for the run file.
	scheduling string
}

// defaultConfig is a load's settings before its options.
func defaultConfig() config {
	return config{
		connections: DefaultConnections,
		keepAlive:   true,
		timeout:     DefaultTimeout,
		idleTimeout: DefaultIdleTimeout,
		maxInFlight: DefaultMaxInFlight,
		messages:    echoproto.DefaultMessages,
		interval:    echoproto.DefaultInterval,
	}
}

// streams says whether the load opens gRPC streams or WebSocket sessions.
func (c *config) streams() bool {
	return c.protocol == zdv1.ProtocolGRPCStream || c.protocol == zdv1.ProtocolWebSocket || (c.protocol == zdv1.ProtocolGRPC && c.streamEvery > 0)
}

// New validates the options. Nothing is sent until Run or Start.
func New(opts ...Option) (*Load, error) {
	c := defaultConfig()
	for _, o := range opts {
		o(&c)
	}
	var errs []error
	if len(c.targets) == 0 {
		errs = append(errs, errors.New("no target URL: give at least one (e.g. http://127.0.0.1:8080/)"))
	}
	var targets []*url.URL
	for _, t := range c.targets {
		u, err := url.Parse(t)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("target %q: %w", t, err))
		case u.Scheme != "http" && u.Scheme != "https":
			errs = append(errs, fmt.Errorf("target %q: scheme must be http or https", t))
		case u.Host == "":
			errs = append(errs, fmt.Errorf("target %q: no host", t))
		default:
			if p := u.Port(); p != "" {
				if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
					errs = append(errs, fmt.Errorf("target %q: port %s is not in 1-65535", t, p))
					continue
				}
			}
			targets = append(targets, u)
		}
	}
	if c.rate <= 0 || c.rate > MaxRate {
		errs = append(errs, fmt.Errorf("rate %d: must be 1 to %d requests per second (one generator sustains about 8,000/s on 2 cores; "+
			"past %d/s its schedule is finer than its clock)", c.rate, MaxRate, MaxRate))
	}
	if c.duration < 0 || c.duration > MaxDuration {
		errs = append(errs, fmt.Errorf("duration %s: must be 0 (run until stopped) up to %s", c.duration, MaxDuration))
	}
	if strings.IndexFunc(c.host, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		errs = append(errs, fmt.Errorf("host %q: a Host header holds no spaces or control characters", c.host))
	}
	if c.connections < 1 {
		errs = append(errs, fmt.Errorf("connections %d: must be at least 1", c.connections))
	}
	if c.maxConnections < 0 {
		errs = append(errs, fmt.Errorf("max connections %d: must not be negative (0 means no cap)", c.maxConnections))
	}
	if c.timeout <= 0 || c.timeout > MaxTimeout {
		errs = append(errs, fmt.Errorf("timeout %s: must be positive, at most %s", c.timeout, MaxTimeout))
	}
	if c.idleTimeout <= 0 || c.idleTimeout > MaxTimeout {
		errs = append(errs, fmt.Errorf("idle timeout %s: must be positive, at most %s", c.idleTimeout, MaxTimeout))
	}
	if c.maxInFlight < 1 {
		errs = append(errs, fmt.Errorf("max in flight %d: must be at least 1", c.maxInFlight))
	}
	if c.rotate < 0 || c.rotate > MaxRotation {
		errs = append(errs, fmt.Errorf("rotate connections %d: from 0 (Go's pool) to %d", c.rotate, MaxRotation))
	}
	if c.rotate > 0 && !c.keepAlive {
		errs = append(errs, fmt.Errorf("rotate connections %d: rotation needs keep-alive (a connection per request has nothing to rotate)", c.rotate))
	}
	if c.maxLag < 0 {
		errs = append(errs, fmt.Errorf("max send lag %s: must not be negative (0 means the default)", c.maxLag))
	}
	if c.streamEvery < 0 || c.streamEvery > echoproto.MaxMessages || (c.streamEvery > 0 && c.protocol != zdv1.ProtocolGRPC) {
		errs = append(errs, fmt.Errorf("a stream every %d requests: want 0 to %d, with protocol %s", c.streamEvery, echoproto.MaxMessages, zdv1.ProtocolGRPC))
	}
	if c.streams() {
		if c.messages < 1 || c.messages > echoproto.MaxMessages {
			errs = append(errs, fmt.Errorf("stream messages %d: want 1 to %d", c.messages, echoproto.MaxMessages))
		}
		if c.interval < 0 || c.interval > echoproto.MaxInterval {
			errs = append(errs, fmt.Errorf("stream interval %s: want 0 to %s", c.interval, echoproto.MaxInterval))
		}
	} else if def := defaultConfig(); c.messages != def.messages || c.interval != def.interval {
		errs = append(errs, fmt.Errorf("a stream of %d messages every %s: only protocols %s and %s have streams (and %s with a stream every k requests)", c.messages, c.interval,
			zdv1.ProtocolGRPCStream, zdv1.ProtocolWebSocket, zdv1.ProtocolGRPC))
	}
	switch c.protocol {
	case "", zdv1.ProtocolHTTP1, zdv1.ProtocolWebSocket:
	case zdv1.ProtocolH2C, zdv1.ProtocolGRPC, zdv1.ProtocolGRPCStream:
		if !c.keepAlive {
			errs = append(errs, fmt.Errorf("protocol %s: its requests are streams on kept-alive connections, so keep-alive cannot be off", c.protocol))
		}
		for _, t := range targets {
			if t.Scheme != "http" {
				errs = append(errs, fmt.Errorf("protocol %s: target %s is not http:// (it speaks HTTP/2 without TLS, h2c)", c.protocol, zdv1.RedactString(t.String())))
			}
		}
	default:
		errs = append(errs, fmt.Errorf("protocol %q: want one of %s", c.protocol, strings.Join(zdv1.Protocols, ", ")))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("invalid load settings: %w", err)
	}
	if c.runID == "" {
		c.runID = runfile.NewRunID()
	}
	if c.ports == nil {
		p, err := NewPorts()
		if err != nil {
			return nil, fmt.Errorf("invalid load settings: %w", err)
		}
		c.ports = p
	}
	l := &Load{cfg: c, targets: targets, scheduling: sched.Current().String()}
	if c.maxLag == 0 {
		// One owner for the default: the schema package, which the verdict
		// reads too.
		l.cfg.maxLag = l.Settings().SendLagBound()
	}
	return l, nil
}

// Settings describes the load for the run file header and the report.
func (l *Load) Settings() zdv1.LoadSettings {
	// A target's userinfo is a credential: the run file names the target
	// without it (the requests still carry it).
	targets := make([]string, len(l.cfg.targets))
	for i, t := range l.cfg.targets {
		targets[i] = zdv1.RedactString(t)
	}
	s := zdv1.LoadSettings{
		Targets:           targets,
		Host:              l.cfg.host,
		Rate:              l.cfg.rate,
		DurationMs:        float64(l.cfg.duration) / float64(time.Millisecond),
		Connections:       l.cfg.connections,
		MaxConnections:    l.cfg.maxConnections,
		KeepAlive:         l.cfg.keepAlive,
		Protocol:          l.protocol(),
		TimeoutMs:         float64(l.cfg.timeout) / float64(time.Millisecond),
		IdleTimeoutMs:     float64(l.cfg.idleTimeout) / float64(time.Millisecond),
		RotateConnections: l.cfg.rotate,
		MaxInFlight:       l.cfg.maxInFlight,
		MaxSendLagMs:      float64(l.cfg.maxLag) / float64(time.Millisecond),
		Scheduling:        l.scheduling,
		LocalPorts:        l.cfg.ports.String(),
	}
	if l.cfg.streams() {
		s.StreamEvery = l.cfg.streamEvery
		s.StreamMessages = l.cfg.messages
		s.StreamIntervalMs = float64(l.cfg.interval) / float64(time.Millisecond)
	}
	return s
}

// protocol is the load's protocol by name (the default's too).
func (l *Load) protocol() string { return zdv1.ProtocolName(l.cfg.protocol) }

// RunID is the prefix of every request id.
func (l *Load) RunID() string { return l.cfg.runID }

// Summary is a running tally of a load, kept without per-request memory.
type Summary struct {
	Started      time.Time
	Ended        time.Time
	Results      int64
	OK           int64
	Dropped      int64
	ErrorClasses map[string]int64
	StatusCodes  map[int]int64
	// Unsent counts requests that were due and never sent (the generator
	// was behind its schedule or at its in-flight cap); Late those sent
	// later than the send-lag bound.
	Unsent int64
	Late   int64
	// ByNode and ByPod count the answers per node and per pod that served
	// them (the echo server's fields), so a scenario can find where the LB
	// sends traffic while the load runs.
	ByNode map[string]int64
	ByPod  map[string]int64
}

// Rate is the achieved results per second between start and end.
func (s Summary) Rate() float64 {
	d := s.Ended.Sub(s.Started).Seconds()
	if d <= 0 {
		return 0
	}
	return float64(s.Results) / d
}

// Run sends load until the duration is up or ctx is cancelled, streaming
// every result to sink. With a fixed duration, cancellation before it is up
// returns ErrInterrupted; with duration 0 cancellation is the normal end.
func (l *Load) Run(ctx context.Context, sink ResultSink) (Summary, error) {
	r, err := l.Start(ctx, sink)
	if err != nil {
		return Summary{}, err
	}
	return r.Wait()
}

// Running is a load in progress.
type Running struct {
	load *Load
	// rt sends each request: HTTP (roundTripper), gRPC (grpcSender) or
	// WebSocket (wsSender).
	rt     sender
	events zdv1.EventSink
	// unwatch ends this load's share of the pause watch, which records
	// when this process itself did not run on time.
	unwatch func()

	// reqCtx is the parent of every request; Abort cancels it.
	reqCtx   context.Context
	abort    context.CancelFunc
	aborted  atomic.Bool
	stopOnce sync.Once
	stopped  chan struct{}
	done     chan struct{}

	slots    chan struct{} // in-flight cap
	inflight sync.WaitGroup
	results  chan zdv1.Result

	mu      sync.Mutex
	sum     Summary
	sinkErr error
	// interrupted is set when a fixed-duration load was stopped early.
	interrupted error
	lastDue     time.Time
}

// Start begins sending load and returns at once. The load ends when its
// duration is up, ctx is cancelled, Stop or Abort is called, or the sink
// fails. A Load starts once.
func (l *Load) Start(ctx context.Context, sink ResultSink) (*Running, error) {
	if sink == nil {
		return nil, errors.New("load: nil result sink")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("load not started: %w", err)
	}
	if !l.started.CompareAndSwap(false, true) {
		return nil, errors.New("load: already started; a Load runs once (create a new one for another run)")
	}
	c := &l.cfg
	events := c.events
	if events == nil {
		events, _ = sink.(zdv1.EventSink)
	}
	// Requests outlive ctx by design: a stop lets those in flight finish
	// (each bounded by the timeout); only Abort cuts them.
	reqCtx, abort := context.WithCancel(context.WithoutCancel(ctx))
	r := &Running{
		load:    l,
		events:  events,
		reqCtx:  reqCtx,
		abort:   abort,
		stopped: make(chan struct{}),
		done:    make(chan struct{}),
		slots:   make(chan struct{}, c.maxInFlight),
		results: make(chan zdv1.Result, resultBuffer),
		sum: Summary{
			Started:      time.Now(),
			ErrorClasses: map[string]int64{},
			StatusCodes:  map[int]int64{},
			ByNode:       map[string]int64{},
			ByPod:        map[string]int64{},
		},
	}
	switch {
	case zdv1.ProtocolIsGRPC(c.protocol):
		g, err := newGRPCSender(c, l.targets, r.goAway)
		if err != nil {
			return nil, fmt.Errorf("load not started: %w", err)
		}
		r.rt = g
	case c.protocol == zdv1.ProtocolWebSocket:
		r.rt = newWSSender(c, l.targets, r.event)
	default:
		tr := newTransport(c, r.goAway)
		var lanes []*http.Transport
		for range c.rotate {
			lane := newTransport(c, r.goAway)
			lane.MaxConnsPerHost, lane.MaxIdleConnsPerHost = 1, 1
			lanes = append(lanes, lane)
		}
		r.rt = &roundTripper{base: tr, lanes: lanes, targets: l.targets, timeout: c.timeout, host: c.host}
	}
	r.event(zdv1.Event{Time: r.sum.Started, Source: zdv1.SourceLoad, Type: zdv1.EventLoadStart,
		Message: "load started", Fields: l.fields()})
	pauses := c.pauses
	if pauses == nil {
		pauses = NewPauseWatch()
	}
	r.unwatch = pauses.subscribe(r.event)

	go func() {
		select {
		case <-ctx.Done():
			r.stop(fmt.Errorf("%w: %w", ErrInterrupted, context.Cause(ctx)))
		case <-r.stopped:
		case <-r.done:
		}
	}()
	go r.consume(sink)
	go r.schedule(r.sum.Started)
	return r, nil
}

func (l *Load) fields() map[string]string {
	c := &l.cfg
	f := map[string]string{
		"rate":          strconv.Itoa(c.rate),
		"duration":      c.duration.String(),
		"connections":   strconv.Itoa(c.connections),
		"keepalive":     strconv.FormatBool(c.keepAlive),
		"protocol":      l.protocol(),
		"timeout":       c.timeout.String(),
		"max_in_flight": strconv.Itoa(c.maxInFlight),
		"max_send_lag":  c.maxLag.String(),
		"id_prefix":     c.runID,
	}
	if c.streams() {
		if c.streamEvery > 0 {
			f["stream_every"] = strconv.Itoa(c.streamEvery)
		}
		f["stream_messages"] = strconv.Itoa(c.messages)
		f["stream_interval"] = c.interval.String()
	}
	for i, t := range c.targets {
		f["target."+strconv.Itoa(i)] = t
	}
	if c.host != "" {
		f["host"] = c.host
	}
	return f
}

// goAway records a GOAWAY the server of conn sent (goAwayScanner).
func (r *Running) goAway(conn net.Conn, g h2frame.GoAway) {
	local, remote, code := conn.LocalAddr().String(), conn.RemoteAddr().String(), h2frame.ErrorName(g.Code)
	f := map[string]string{"conn": local, "remote": remote, "last_stream_id": strconv.FormatUint(uint64(g.LastStreamID), 10),
		"error_code": code}
	msg := fmt.Sprintf("the server sent GOAWAY on connection %s -> %s: last stream %d, %s", local, remote, g.LastStreamID, code)
	if debug := firstLine([]byte(g.Debug), len(g.Debug)); debug != "" {
		f["debug"] = debug
		msg += " (" + debug + ")"
	}
	r.event(zdv1.Event{Time: time.Now(), Source: zdv1.SourceLoad, Type: zdv1.EventGoAway, Object: "conn/" + local, Message: msg, Fields: f})
}

func (r *Running) event(e zdv1.Event) {
	if r.events != nil {
		// Losing a bookkeeping event must not stop the measurement; the
		// run file's own write error surfaces through the result sink.
		_ = r.events.Event(e)
	}
}

// schedule sends request n when vegeta's ConstantPacer says it is due, on a
// goroutine of its own, while an in-flight slot is free and it is not later
// than the lag bound; otherwise the request is unsent and the gap recorded.
func (r *Running) schedule(start time.Time) {
	c := &r.load.cfg
	pacer := vegeta.ConstantPacer{Freq: c.rate, Per: time.Second}
	// ConstantPacer.Pace (vegeta lib/pacer.go) puts hit n at
	// (n+1) x (Per/Freq) after the start; the lag is measured against
	// exactly that.
	interval := time.Second / time.Duration(c.rate)
	var gap unsentSpan
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer func() {
		r.flushUnsent(&gap)
		r.inflight.Wait()
		close(r.results)
	}()
	for seq := uint64(0); ; seq++ {
		// Due times come from the sequence number, not from the previous
		// send, so lateness never accumulates into drift.
		due := start.Add(time.Duration(seq+1) * interval)
		if c.duration > 0 && due.Sub(start) > c.duration {
			return
		}
		wait, stop := pacer.Pace(time.Since(start), seq)
		if stop {
			return
		}
		if wait > 0 {
			timer.Reset(wait)
			select {
			case <-r.stopped:
				timer.Stop()
				return
			case <-timer.C:
			}
		} else {
			select {
			case <-r.stopped:
				return
			default:
			}
		}
		r.mu.Lock()
		r.lastDue = due
		r.mu.Unlock()
		now := time.Now()
		if late := now.Sub(due); late > c.maxLag {
			gap.add(due, fmt.Sprintf("the load generator was %s behind its schedule (bound %s)", late.Round(time.Millisecond), c.maxLag))
			continue
		}
		select {
		case r.slots <- struct{}{}:
		default:
			gap.add(due, fmt.Sprintf("in-flight cap %d reached", c.maxInFlight))
			continue
		}
		r.flushUnsent(&gap)
		r.inflight.Add(1)
		go r.fire(seq, due)
	}
}

// unsentSpan gathers consecutive unsent requests into one event.
type unsentSpan struct {
	n        int64
	from, to time.Time
	reason   string
}

func (g *unsentSpan) add(due time.Time, reason string) {
	if g.n == 0 {
		g.from, g.reason = due, reason
	}
	g.n++
	g.to = due
}

func (r *Running) flushUnsent(g *unsentSpan) {
	if g.n == 0 {
		return
	}
	r.mu.Lock()
	r.sum.Unsent += g.n
	r.mu.Unlock()
	r.event(zdv1.Event{Time: g.from, Source: zdv1.SourceLoad, Type: zdv1.EventUnsent,
		Message: fmt.Sprintf("load generator did not send %d requests due %s to %s: %s",
			g.n, g.from.Format("15:04:05.000"), g.to.Format("15:04:05.000"), g.reason),
		Fields: map[string]string{
			"from":     g.from.Format(time.RFC3339Nano),
			"to":       g.to.Format(time.RFC3339Nano),
			"requests": strconv.FormatInt(g.n, 10),
			"reason":   g.reason,
		}})
	*g = unsentSpan{}
}

// fire sends one request and hands its result to the consumer.
func (r *Running) fire(seq uint64, due time.Time) {
	defer r.inflight.Done()
	defer func() { <-r.slots }()
	c := &r.load.cfg
	target := int(seq % uint64(len(r.load.targets)))
	res := r.rt.do(r.reqCtx, target, c.runID+"-"+strconv.FormatUint(seq, 10))
	if r.aborted.Load() && res.Status == 0 {
		// Abort cut it: the target did not fail it, so it is no result.
		return
	}
	res.Seq = seq
	res.Target = target
	res.Lag = res.Time.Sub(due)
	r.results <- res
}

// stop ends the schedule. reason, when not nil and the load has a fixed
// duration that is not up yet, makes Wait return it.
func (r *Running) stop(reason error) {
	r.stopOnce.Do(func() {
		if reason != nil && r.load.cfg.duration > 0 {
			select {
			case <-r.done:
			default:
				if time.Since(r.sum.Started) < r.load.cfg.duration {
					r.mu.Lock()
					r.interrupted = reason
					r.mu.Unlock()
				}
			}
		}
		close(r.stopped)
	})
}

// Stop ends the load, waits for requests in flight (at most the per-request
// timeout) and returns the summary. For an open-ended load this is the
// normal end; a fixed-duration load stopped early returns ErrInterrupted.
func (r *Running) Stop() (Summary, error) {
	r.stop(ErrInterrupted)
	return r.Wait()
}

// Abort ends the load without waiting out the requests in flight: they are
// cancelled and left out of the results (the target did not fail them),
// and Wait returns ErrAborted. It is the answer to a second Ctrl-C.
func (r *Running) Abort() {
	r.mu.Lock()
	r.interrupted = ErrAborted
	r.mu.Unlock()
	r.aborted.Store(true)
	r.stop(nil)
	r.abort()
}

// Done is closed when the load has ended and every result is in the sink.
func (r *Running) Done() <-chan struct{} { return r.done }

// Wait blocks until the load ends and returns its summary and, if it broke,
// why: the sink failed, or a fixed-duration load was interrupted or aborted.
func (r *Running) Wait() (Summary, error) {
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	sum := r.sum.clone()
	if r.sinkErr != nil {
		return sum, fmt.Errorf("load stopped: recording a result failed: %w", r.sinkErr)
	}
	return sum, r.interrupted
}

// clone copies the tallies, so a caller's Summary stays put while the load
// goes on counting.
func (s Summary) clone() Summary {
	s.ErrorClasses = maps.Clone(s.ErrorClasses)
	s.StatusCodes = maps.Clone(s.StatusCodes)
	s.ByNode = maps.Clone(s.ByNode)
	s.ByPod = maps.Clone(s.ByPod)
	return s
}

// Snapshot returns the tally so far.
func (r *Running) Snapshot() Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	sum := r.sum.clone()
	if sum.Ended.IsZero() {
		sum.Ended = time.Now()
	}
	return sum
}

// count adds one result to the live tally. The tally follows the run file's
// own rule (zdv1.Result.FailureKind), so the live figures and the
// verdict never disagree on what was dropped.
func (s *Summary) count(res *zdv1.Result, lagBound time.Duration) {
	s.Results++
	if k := res.FailureKind(); k == "" {
		s.OK++
	} else {
		s.Dropped++
		if res.Status == 0 || k == zdv1.ClassRetried {
			s.ErrorClasses[k]++
		}
	}
	if res.Lag > lagBound {
		s.Late++
	}
	if res.Status != 0 {
		s.StatusCodes[res.Status]++
	}
	if res.Node != "" {
		s.ByNode[res.Node]++
	}
	if res.Pod != "" {
		s.ByPod[res.Pod]++
	}
}

func (r *Running) consume(sink ResultSink) {
	defer close(r.done)
	defer r.rt.close()
	var failed bool
	lagBound := r.load.cfg.maxLag
	for res := range r.results {
		r.mu.Lock()
		r.sum.count(&res, lagBound)
		r.mu.Unlock()
		if failed {
			continue // drain so the requests in flight can finish
		}
		if err := sink.Result(res); err != nil {
			failed = true
			r.mu.Lock()
			r.sinkErr = err
			r.mu.Unlock()
			r.stop(nil)
		}
	}
	r.unwatch()
	r.mu.Lock()
	r.sum.Ended = time.Now()
	sum := r.sum
	lastDue := r.lastDue
	r.mu.Unlock()
	fields := map[string]string{
		"results": strconv.FormatInt(sum.Results, 10),
		"dropped": strconv.FormatInt(sum.Dropped, 10),
		"unsent":  strconv.FormatInt(sum.Unsent, 10),
	}
	if !lastDue.IsZero() {
		// The verdict judges whole seconds of the schedule up to here.
		fields["last_due"] = lastDue.Format(time.RFC3339Nano)
	}
	r.event(zdv1.Event{Time: sum.Ended, Source: zdv1.SourceLoad, Type: zdv1.EventLoadStop,
		Message: "load stopped", Fields: fields})
}

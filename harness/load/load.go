// Package load generates constant-rate HTTP load with the vegeta library and
// attributes every result: send time, latency, status, error class, and the
// identity the echo server reports (pod, node, client IP, readiness,
// draining, connection id and reuse).
//
// Results are handed to a ResultSink (a *runfile.Writer) one by one as they
// complete; nothing per-request is kept in memory, so a long run stays flat.
// A load runs for a fixed duration or, with duration 0, until its context is
// cancelled or Stop is called, so a scenario can start load, act on the
// cluster and then stop it.
//
// Every request carries a unique X-Request-Id "<run id>-<seq>". Connections
// are HTTP/1.1; environment proxies are ignored.
//
// The load is open-loop: when responses stall, more requests are started to
// keep the rate, so a blackhole does not hide drops behind a sagging rate.
// Memory then grows with the requests in flight, about rate x timeout of
// them at some 30 KiB each (1000/s with a 5 s timeout: roughly 150 MiB);
// steady-state memory is flat (about 20 MiB RSS at 1000/s). WithWorkers
// caps concurrency at the price of a sagging rate.
package load

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"zerodrop/harness/runfile"
	"zerodrop/reports"
)

// Defaults.
const (
	DefaultConnections = 100
	DefaultTimeout     = 5 * time.Second
	// maxBody bounds how much of each response is kept for attribution;
	// the echo reply is a few hundred bytes.
	maxBody = 64 << 10
)

// ErrInterrupted is returned when a fixed-duration load was stopped before
// its duration was up (context cancelled or Stop called).
var ErrInterrupted = errors.New("load interrupted before its duration was up")

// ResultSink receives every result as it completes. *runfile.Writer is one.
// It is called from a single goroutine.
type ResultSink interface {
	Result(runfile.Result) error
}

// ResultFunc adapts a function to ResultSink.
type ResultFunc func(runfile.Result) error

// Result calls f(r).
func (f ResultFunc) Result(r runfile.Result) error { return f(r) }

type config struct {
	targets        []string
	host           string
	rate           int
	duration       time.Duration
	connections    int
	maxConnections int
	keepAlive      bool
	timeout        time.Duration
	insecure       bool
	workers        uint64
	maxWorkers     uint64
	runID          string
	events         runfile.EventSink
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
// are kept for reuse (default 100), like vegeta's -connections.
func WithConnections(n int) Option { return func(c *config) { c.connections = n } }

// WithMaxConnections caps the connections per target host, open or idle;
// 0 (default) means no cap. Requests beyond it wait for a connection.
func WithMaxConnections(n int) Option { return func(c *config) { c.maxConnections = n } }

// WithKeepAlive turns connection reuse on (default) or off.
func WithKeepAlive(on bool) Option { return func(c *config) { c.keepAlive = on } }

// WithTimeout sets the per-request timeout, connect to last body byte
// (default 5s). A request that exceeds it is a "timeout" failure.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithInsecureTLS skips certificate verification for https targets.
func WithInsecureTLS() Option { return func(c *config) { c.insecure = true } }

// WithWorkers sets the initial and maximum number of concurrent requests
// (vegeta workers). The default starts at 10 and grows without bound to keep
// the rate when responses are slow; a maximum makes the rate sag instead.
func WithWorkers(initial, max uint64) Option {
	return func(c *config) { c.workers, c.maxWorkers = initial, max }
}

// WithRunID sets the request-id prefix (default: a random id).
func WithRunID(id string) Option { return func(c *config) { c.runID = id } }

// WithEvents records the load's start and stop as events. Without it, a
// result sink that is also an EventSink (a *runfile.Writer) gets them.
func WithEvents(sink runfile.EventSink) Option { return func(c *config) { c.events = sink } }

// Load is a validated load configuration. Run or Start it, once per run
// file as a rule; starting it again is allowed and keeps request ids unique.
type Load struct {
	cfg    config
	starts atomic.Int64
}

// New validates the options. Nothing is sent until Run or Start.
func New(opts ...Option) (*Load, error) {
	c := config{
		connections: DefaultConnections,
		keepAlive:   true,
		timeout:     DefaultTimeout,
		workers:     vegeta.DefaultWorkers,
		maxWorkers:  vegeta.DefaultMaxWorkers,
	}
	for _, o := range opts {
		o(&c)
	}
	var errs []error
	if len(c.targets) == 0 {
		errs = append(errs, errors.New("no target URL: give at least one (e.g. http://127.0.0.1:8080/)"))
	}
	for _, t := range c.targets {
		u, err := url.Parse(t)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("target %q: %w", t, err))
		case u.Scheme != "http" && u.Scheme != "https":
			errs = append(errs, fmt.Errorf("target %q: scheme must be http or https", t))
		case u.Host == "":
			errs = append(errs, fmt.Errorf("target %q: no host", t))
		}
	}
	if c.rate <= 0 {
		errs = append(errs, fmt.Errorf("rate %d: must be at least 1 request per second", c.rate))
	}
	if c.duration < 0 {
		errs = append(errs, fmt.Errorf("duration %s: must not be negative (0 runs until stopped)", c.duration))
	}
	if c.connections < 1 {
		errs = append(errs, fmt.Errorf("connections %d: must be at least 1", c.connections))
	}
	if c.maxConnections < 0 {
		errs = append(errs, fmt.Errorf("max connections %d: must not be negative (0 means no cap)", c.maxConnections))
	}
	if c.timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout %s: must be positive", c.timeout))
	}
	if c.workers < 1 || c.maxWorkers < c.workers {
		errs = append(errs, fmt.Errorf("workers %d..%d: need 1 <= initial <= max", c.workers, c.maxWorkers))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("invalid load settings: %w", err)
	}
	if c.runID == "" {
		c.runID = runfile.NewRunID()
	}
	return &Load{cfg: c}, nil
}

// Settings describes the load for the run file header and the report.
func (l *Load) Settings() reports.LoadSettings {
	return reports.LoadSettings{
		Targets:        append([]string(nil), l.cfg.targets...),
		Host:           l.cfg.host,
		Rate:           l.cfg.rate,
		DurationMs:     float64(l.cfg.duration) / float64(time.Millisecond),
		Connections:    l.cfg.connections,
		MaxConnections: l.cfg.maxConnections,
		KeepAlive:      l.cfg.keepAlive,
		TimeoutMs:      float64(l.cfg.timeout) / float64(time.Millisecond),
	}
}

// RunID is the prefix of every request id (of the first start; later
// starts append ".N").
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
	load     *Load
	attacker *vegeta.Attacker
	tr       *http.Transport
	stopOnce sync.Once
	stopped  chan struct{}
	done     chan struct{}

	events   runfile.EventSink
	idPrefix string

	mu      sync.Mutex
	sum     Summary
	sinkErr error
	// interrupted is set when a fixed-duration load was stopped early.
	interrupted error
}

// Start begins sending load and returns at once. The load ends when its
// duration is up, ctx is cancelled, Stop is called, or the sink fails.
func (l *Load) Start(ctx context.Context, sink ResultSink) (*Running, error) {
	if sink == nil {
		return nil, errors.New("load: nil result sink")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("load not started: %w", err)
	}
	c := &l.cfg
	// vegeta numbers requests from 0 on every attack, so a second start
	// gets its own id prefix.
	idPrefix := c.runID
	if n := l.starts.Add(1) - 1; n > 0 {
		idPrefix = c.runID + "." + strconv.FormatInt(n, 10)
	}
	tr := newTransport(c)
	att := &attempts{m: make(map[uint64]*attempt)}
	client := &http.Client{
		Transport: &roundTripper{base: tr, timeout: c.timeout, runID: idPrefix, attempts: att},
		// A redirect is an answer like any other: recorded, not followed.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	attacker := vegeta.NewAttacker(
		vegeta.Client(client),
		vegeta.Workers(c.workers),
		vegeta.MaxWorkers(c.maxWorkers),
		vegeta.MaxBody(maxBody),
	)
	targets := make([]vegeta.Target, len(c.targets))
	index := make(map[string]int, len(c.targets))
	for i, u := range c.targets {
		targets[i] = vegeta.Target{Method: http.MethodGet, URL: u}
		if c.host != "" {
			targets[i].Header = http.Header{"Host": []string{c.host}}
		}
		index[u] = i
	}
	events := c.events
	if events == nil {
		events, _ = sink.(runfile.EventSink)
	}
	r := &Running{
		load:     l,
		idPrefix: idPrefix,
		events:   events,
		attacker: attacker,
		tr:       tr,
		stopped:  make(chan struct{}),
		done:     make(chan struct{}),
		sum: Summary{
			Started:      time.Now(),
			ErrorClasses: map[string]int64{},
			StatusCodes:  map[int]int64{},
			ByNode:       map[string]int64{},
			ByPod:        map[string]int64{},
		},
	}
	r.event(runfile.Event{Time: r.sum.Started, Source: runfile.SourceLoad, Type: runfile.Action,
		Message: "load started", Fields: l.fields(idPrefix)})

	pacer := vegeta.ConstantPacer{Freq: c.rate, Per: time.Second}
	results := attacker.Attack(vegeta.NewStaticTargeter(targets...), pacer, c.duration, "zerodrop")

	go func() {
		select {
		case <-ctx.Done():
			r.stop(fmt.Errorf("%w: %w", ErrInterrupted, context.Cause(ctx)))
		case <-r.stopped:
		case <-r.done:
		}
	}()
	go r.consume(results, att, index, sink)
	return r, nil
}

func (l *Load) fields(idPrefix string) map[string]string {
	c := &l.cfg
	f := map[string]string{
		"rate":        strconv.Itoa(c.rate),
		"duration":    c.duration.String(),
		"connections": strconv.Itoa(c.connections),
		"keepalive":   strconv.FormatBool(c.keepAlive),
		"timeout":     c.timeout.String(),
		"id_prefix":   idPrefix,
	}
	for i, t := range c.targets {
		f["target."+strconv.Itoa(i)] = t
	}
	if c.host != "" {
		f["host"] = c.host
	}
	return f
}

func (r *Running) event(e runfile.Event) {
	if r.events != nil {
		// Losing a bookkeeping event must not stop the measurement; the
		// run file's own write error surfaces through the result sink.
		_ = r.events.Event(e)
	}
}

// stop ends the attack. reason, when not nil and the load has a fixed
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
		r.attacker.Stop()
	})
}

// Stop ends the load, waits for requests in flight (at most the per-request
// timeout) and returns the summary. For an open-ended load this is the
// normal end; a fixed-duration load stopped early returns ErrInterrupted.
func (r *Running) Stop() (Summary, error) {
	r.stop(ErrInterrupted)
	return r.Wait()
}

// Done is closed when the load has ended and every result is in the sink.
func (r *Running) Done() <-chan struct{} { return r.done }

// Wait blocks until the load ends and returns its summary and, if it broke,
// why: the sink failed or a fixed-duration load was interrupted.
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

func (r *Running) consume(results <-chan *vegeta.Result, att *attempts, index map[string]int, sink ResultSink) {
	defer close(r.done)
	defer r.tr.CloseIdleConnections()
	var failed bool
	for vr := range results {
		res := attribute(vr, att.take(vr.Seq), index, r.idPrefix)
		r.mu.Lock()
		r.sum.Results++
		if k := res.FailureKind(); k == "" {
			r.sum.OK++
		} else {
			r.sum.Dropped++
			if res.Status == 0 {
				r.sum.ErrorClasses[res.Class]++
			}
		}
		if res.Status != 0 {
			r.sum.StatusCodes[res.Status]++
		}
		if res.Node != "" {
			r.sum.ByNode[res.Node]++
		}
		if res.Pod != "" {
			r.sum.ByPod[res.Pod]++
		}
		r.mu.Unlock()
		if failed {
			continue // drain so vegeta's workers can finish
		}
		if err := sink.Result(res); err != nil {
			failed = true
			r.mu.Lock()
			r.sinkErr = err
			r.mu.Unlock()
			r.stop(nil)
		}
	}
	r.mu.Lock()
	r.sum.Ended = time.Now()
	sum := r.sum
	r.mu.Unlock()
	r.event(runfile.Event{Time: sum.Ended, Source: runfile.SourceLoad, Type: runfile.Action,
		Message: "load stopped", Fields: map[string]string{
			"results": strconv.FormatInt(sum.Results, 10),
			"dropped": strconv.FormatInt(sum.Dropped, 10),
		}})
}

func attribute(vr *vegeta.Result, a *attempt, index map[string]int, idPrefix string) runfile.Result {
	res := runfile.Result{
		Seq:     vr.Seq,
		Target:  index[vr.URL],
		Time:    vr.Timestamp,
		Latency: vr.Latency,
		Status:  int(vr.Code),
	}
	if a != nil {
		res.ID = a.id
		res.Reused = a.reused.Load()
	} else {
		// The request never reached the transport (it could not be built).
		res.ID = idPrefix + "-" + strconv.FormatUint(vr.Seq, 10)
	}
	if res.Status == 0 {
		res.Error = vr.Error
		if a != nil {
			res.Class = a.errClass()
		}
		if res.Class == "" {
			res.Class = runfile.ClassOther
		}
		return res
	}
	if len(vr.Body) > 0 {
		var e echoReply
		if parseEcho(vr.Body, &e) {
			res.Pod, res.Node, res.ClientIP = e.Pod, e.Node, e.ClientIP
			res.Ready, res.Draining = e.Ready, e.Draining
			res.ConnID, res.ConnRequest = e.ConnID, e.ConnRequest
		}
	}
	return res
}

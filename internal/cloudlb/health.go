package cloudlb

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"

	"k8s.io/utils/clock"

	cloudlbv1 "zerodrop.dev/zerodrop/apis/cloudlb/v1"
	"zerodrop.dev/zerodrop/clusters/lb/profiles"
)

// HealthState is the verdict of one (service, node) health check: it turns
// healthy after HealthyThreshold consecutive successes and unhealthy after
// UnhealthyThreshold consecutive failures, and starts unhealthy (a new backend
// takes traffic only once it has passed, as on GCP, AWS and Azure).
type HealthState struct {
	healthyThreshold   int
	unhealthyThreshold int
	healthy            bool
	successes          int
	failures           int
	checks             int
	// settled: the verdict has been reached once (healthy, or
	// unhealthyThreshold failures in a row): no longer "initial".
	settled bool
}

// NewHealthState returns an unhealthy state using hc's thresholds.
func NewHealthState(hc profiles.HealthCheck) *HealthState {
	return &HealthState{healthyThreshold: hc.HealthyThreshold, unhealthyThreshold: hc.UnhealthyThreshold}
}

// Observe records one result and reports whether the verdict flipped.
func (s *HealthState) Observe(r cloudlbv1.CheckResult) (flipped bool) {
	s.checks++
	if r.OK {
		s.successes++
		s.failures = 0
		if !s.healthy && s.successes >= s.healthyThreshold {
			s.healthy, s.settled = true, true
			return true
		}
		return false
	}
	s.failures++
	s.successes = 0
	if s.failures >= s.unhealthyThreshold {
		s.settled = true
	}
	if s.healthy && s.failures >= s.unhealthyThreshold {
		s.healthy = false
		return true
	}
	return false
}

// Healthy is the current verdict.
func (s *HealthState) Healthy() bool { return s.healthy }

// Initial reports whether the unit has not reached a verdict yet: never
// healthy, and short of unhealthyThreshold failures in a row (AWS's
// "initial" target state: "performing the initial health checks", ELB
// user guide, "Target health status").
func (s *HealthState) Initial() bool { return !s.settled }

// Checker performs one health check of url within ctx's deadline.
type Checker func(ctx context.Context, url string) cloudlbv1.CheckResult

// HTTPChecker returns a Checker that GETs the URL with a fresh connection each
// time (cloud health checkers close theirs) and passes only on 200; a
// tcp://host:port URL is a connect-only check that passes when accepted.
// dial may be nil (net.Dialer); tests pass one that dials from a network namespace.
func HTTPChecker(clk clock.PassiveClock, dial func(ctx context.Context, network, addr string) (net.Conn, error)) Checker {
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	client := &http.Client{
		Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true, Proxy: nil},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return func(ctx context.Context, url string) cloudlbv1.CheckResult {
		start := clk.Now()
		res := cloudlbv1.CheckResult{Time: start, URL: url}
		if addr, ok := strings.CutPrefix(url, "tcp://"); ok {
			// A TCP check passes when the connection is accepted (AWS NLB
			// and Azure TCP probes); it is closed at once.
			conn, err := dial(ctx, "tcp", addr)
			res.Latency = clk.Since(start)
			if err != nil {
				res.Error = checkError(ctx, err)
				return res
			}
			_ = conn.Close()
			res.OK = true
			return res
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			res.Error = err.Error()
			return res
		}
		req.Header.Set("User-Agent", "zerodrop-lb-healthcheck")
		resp, err := client.Do(req)
		res.Latency = clk.Since(start)
		if err != nil {
			res.Error = checkError(ctx, err)
			return res
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		res.Status = resp.StatusCode
		res.OK = resp.StatusCode == http.StatusOK
		return res
	}
}

// checkError is a failed check's reason: "timeout" when the check's own
// deadline ran out, else the error.
func checkError(ctx context.Context, err error) string {
	if ctx.Err() == context.DeadlineExceeded {
		return "timeout"
	}
	return err.Error()
}

// ProbeKey names one health-checked unit: a node of a service.
type ProbeKey struct {
	Service string // namespace/name
	Node    string
}

// Probe is what a Monitor checks for one unit.
type Probe struct {
	Key         ProbeKey
	URL         string
	HealthCheck profiles.HealthCheck
}

// Transition is a health verdict flip and the check that caused it.
type Transition struct {
	Key     ProbeKey
	Healthy bool
	Result  cloudlbv1.CheckResult
	// Recent holds the results that led to the flip (the threshold's worth), oldest first.
	Recent []cloudlbv1.CheckResult
}

// Monitor runs one health-check loop per Probe: a check at start, then every
// interval, each bounded by the timeout. Changes to the probe set take effect
// without disturbing the loops that stay.
type Monitor struct {
	clk      clock.WithTicker
	check    Checker
	notify   func(Transition)
	onChange func()

	mu    sync.Mutex
	loops map[ProbeKey]*probeLoop
	wg    sync.WaitGroup
}

type probeLoop struct {
	probe  Probe
	cancel context.CancelFunc
	mu     sync.Mutex
	state  *HealthState
	// published is the verdict others see; it follows state only after the
	// flip has been notified, so "node unhealthy" is recorded before anything
	// acts on it.
	published bool
	recent    []cloudlbv1.CheckResult
	last      cloudlbv1.CheckResult
}

// NewMonitor returns a Monitor; notify is called (from the loop's goroutine) on every flip.
func NewMonitor(clk clock.WithTicker, check Checker, notify func(Transition)) *Monitor {
	return &Monitor{clk: clk, check: check, notify: notify, loops: map[ProbeKey]*probeLoop{}}
}

// OnChange sets f to be called after a flip has been notified and is visible
// through Healthy (to re-evaluate whatever depends on it). Call before Set.
func (m *Monitor) OnChange(f func()) { m.onChange = f }

// Set makes the running probes equal to probes: new ones start unhealthy, gone
// ones stop, and a probe whose URL or timing changed restarts unhealthy.
func (m *Monitor) Set(ctx context.Context, probes []Probe) {
	m.mu.Lock()
	defer m.mu.Unlock()
	want := map[ProbeKey]Probe{}
	for _, p := range probes {
		want[p.Key] = p
	}
	for k, l := range m.loops {
		if p, ok := want[k]; !ok || p != l.probe {
			l.cancel()
			delete(m.loops, k)
		}
	}
	for k, p := range want {
		if _, ok := m.loops[k]; ok {
			continue
		}
		lctx, cancel := context.WithCancel(ctx)
		l := &probeLoop{probe: p, cancel: cancel, state: NewHealthState(p.HealthCheck)}
		m.loops[k] = l
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.run(lctx, l)
		}()
	}
}

// loop returns the unit's loop, locked, and the function that unlocks it;
// nil when the unit is unknown.
func (m *Monitor) loop(k ProbeKey) (*probeLoop, func()) {
	m.mu.Lock()
	l, ok := m.loops[k]
	m.mu.Unlock()
	if !ok {
		return nil, func() {}
	}
	l.mu.Lock()
	return l, l.mu.Unlock
}

// Healthy reports the verdict of a unit (false when unknown).
func (m *Monitor) Healthy(k ProbeKey) bool {
	l, unlock := m.loop(k)
	defer unlock()
	return l != nil && l.published
}

// Initial reports whether a unit is still in its first checks (true when
// unknown): HealthState.Initial.
func (m *Monitor) Initial(k ProbeKey) bool {
	l, unlock := m.loop(k)
	defer unlock()
	return l == nil || l.state.Initial()
}

// Last returns the latest check result of a unit.
func (m *Monitor) Last(k ProbeKey) (cloudlbv1.CheckResult, bool) {
	l, unlock := m.loop(k)
	defer unlock()
	if l == nil {
		return cloudlbv1.CheckResult{}, false
	}
	return l.last, l.last.URL != ""
}

// Stop ends every loop and waits for them.
func (m *Monitor) Stop() {
	m.mu.Lock()
	for k, l := range m.loops {
		l.cancel()
		delete(m.loops, k)
	}
	m.mu.Unlock()
	m.wg.Wait()
}

func (m *Monitor) run(ctx context.Context, l *probeLoop) {
	hc := l.probe.HealthCheck
	t := m.clk.NewTicker(hc.Interval.D())
	defer t.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, hc.Timeout.D())
		res := m.check(cctx, l.probe.URL)
		cancel()
		if ctx.Err() != nil {
			return
		}
		l.mu.Lock()
		l.last = res
		l.recent = append(l.recent, res)
		if n := max(hc.HealthyThreshold, hc.UnhealthyThreshold); len(l.recent) > n {
			l.recent = l.recent[len(l.recent)-n:]
		}
		wasInitial := l.state.Initial()
		flipped := l.state.Observe(res)
		// A unit that failed its first checks leaves "initial" without a
		// flip (it started unhealthy); a Pod-targeted LB's fail-open
		// counts it from then on (Controller.failOpenSet).
		settled := wasInitial && !l.state.Initial() && !flipped
		var tr Transition
		if flipped {
			need := hc.UnhealthyThreshold
			if l.state.Healthy() {
				need = hc.HealthyThreshold
			}
			tr = Transition{Key: l.probe.Key, Healthy: l.state.Healthy(), Result: res,
				Recent: append([]cloudlbv1.CheckResult(nil), l.recent[max(0, len(l.recent)-need):]...)}
		}
		l.mu.Unlock()
		if flipped {
			if m.notify != nil {
				m.notify(tr)
			}
			l.mu.Lock()
			l.published = tr.Healthy
			l.mu.Unlock()
			if m.onChange != nil {
				m.onChange()
			}
		}
		if settled && m.onChange != nil {
			m.onChange()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

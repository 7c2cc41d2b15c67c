// Package verdict turns a run file into a report scenario: totals, failure
// windows, latency, per-pod and per-node attribution, the readiness and
// client-IP checks, and a PASS/FAIL/ERROR verdict whose reasons cite those
// numbers and the events nearest each failure window.
//
// Analysis streams the run file; memory depends on the number of pods,
// nodes, client IPs, events and failure-window slots (at most run duration
// divided by the window gap), never on the number of requests. Percentiles
// come from a fixed-size histogram (see zdv1.Latency for the accuracy).
package verdict

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	zdv1 "zerodrop.dev/zerodrop/apis/v1"
	"zerodrop.dev/zerodrop/harness/runfile"
)

// Defaults.
const (
	DefaultWindowGap = time.Second
	// DefaultMaxEvents bounds the events listed in the report.
	DefaultMaxEvents = 2000
	// maxRetainedEvents bounds the events held for nearest-event lookups.
	maxRetainedEvents = 200_000
	// nearestAround is how many events before and after a window are cited;
	// nearestDuring caps the events cited from inside it.
	nearestAround = 3
	nearestDuring = 20
)

type options struct {
	override  *zdv1.Criteria
	maxEvents int
	runFile   string
}

// Option configures AnalyzeFile.
type Option func(*options)

// WithOverrides replaces criteria the run file gives (its header, then its
// last criteria event) before they are applied: what a user asks for on
// the command line. Only the fields set in o replace the run file's (as a
// JSON merge: a nil pointer or empty value is "not overridden"), so a
// re-analysis never silently drops a check. The scenario records o as
// CriteriaOverrides, so the report says what was overridden and a reader
// can re-derive the verdict from the run file with the same overrides.
func WithOverrides(o zdv1.Criteria) Option {
	return func(opts *options) { opts.override = &o }
}

// ApplyOverrides merges the fields set in o into c (see WithOverrides).
func ApplyOverrides(c *zdv1.Criteria, o zdv1.Criteria) error {
	b, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("criteria overrides: %w", err)
	}
	if err := json.Unmarshal(b, c); err != nil {
		return fmt.Errorf("criteria overrides: %w", err)
	}
	return nil
}

// WithMaxEvents caps the events listed in the scenario (default 2000).
func WithMaxEvents(n int) Option { return func(o *options) { o.maxEvents = n } }

// WithRunFileName sets how the scenario refers to its run file (default:
// the path's base name).
func WithRunFileName(name string) Option { return func(o *options) { o.runFile = name } }

// slot gathers the failures whose send time falls in one window-gap-wide
// interval. All failures in a slot are closer than the gap, so they belong
// to one window; windows are exact while memory is bounded by
// duration/gap.
type slot struct {
	min, max int64 // send time, unix ns
	count    int64
	classes  map[string]int64
}

type podAgg struct {
	node                                          string
	count                                         int64
	unready, unreadyReused, draining, drainReused int64
}

type analysis struct {
	meta      *zdv1.Header
	end       *zdv1.End
	truncated bool
	readErr   error

	res    zdv1.Results
	hist   histogram
	histOK histogram
	first  int64
	last   int64
	gap    int64
	slots  map[int64]*slot
	pods   map[string]*podAgg
	nodes  map[string]int64
	ips    map[string]int64
	// xff counts the X-Forwarded-For headers of attributed answers ("" for
	// none).
	xff map[string]int64

	events        []zdv1.Event
	eventsDropped int64
	// spans are the events that last (lasting), found once for explain
	// and limitOpens.
	spans        []span
	lastLine     int
	deliv        *delivery
	criteriaErr  error
	afterRemoval *zdv1.AfterRemoval
	corrupt      runfile.Corrupt
	// chain is the hash chain's head recomputed over the lines read before
	// the end line (runfile.Stats.Chain).
	chain string
	// disruption is when the run's disruption began (unix ns of its first
	// harness disruption event), 0 when it marks none.
	disruption int64
	// controls are the run's control events: its column's controls.
	controls []zdv1.Event
	// seqs is which request numbers the results carry, to find holes and
	// repeats; eventLines counts the event lines; unsent the requests the
	// load generator's unsent events say it never sent.
	seqs       seqSet
	eventLines int64
	unsent     int64
}

// maxSeqs bounds the request numbers a run file may use (16 MiB of
// bits): more than 7 days at 200/s. A number past it is a problem of the
// run file, not a reason to allocate.
const maxSeqs = 1 << 27

// seqSet is a bitset of request numbers with a count of repeats.
type seqSet struct {
	bits     []uint64
	distinct int64
	repeats  int64
	max      uint64 // the highest number seen, when distinct > 0
	tooLarge int64
}

func (s *seqSet) add(n uint64) {
	if n >= maxSeqs {
		s.tooLarge++
		return
	}
	w, b := n/64, uint64(1)<<(n%64)
	if int(w) >= len(s.bits) {
		grow := max(int(w)+1, 2*len(s.bits))
		s.bits = append(s.bits, make([]uint64, grow-len(s.bits))...)
	}
	if s.bits[w]&b != 0 {
		s.repeats++
		return
	}
	s.bits[w] |= b
	s.distinct++
	if s.distinct == 1 || n > s.max {
		s.max = n
	}
}

// AnalyzeFile reads the run file at path and returns the scenario with its
// verdict. An error means the file could not be opened at all; anything
// wrong inside it (no header, a bad line, a cut-off end, a run that
// reported an error) yields a scenario with an ERROR verdict that says so.
func AnalyzeFile(ctx context.Context, path string, opts ...Option) (zdv1.Scenario, error) {
	o := options{maxEvents: DefaultMaxEvents, runFile: filepath.Base(path)}
	for _, opt := range opts {
		opt(&o)
	}
	a := &analysis{
		slots: map[int64]*slot{},
		pods:  map[string]*podAgg{},
		nodes: map[string]int64{},
		ips:   map[string]int64{},
		xff:   map[string]int64{},
		res: zdv1.Results{
			ErrorClasses: map[string]int64{},
			StatusCodes:  map[string]int64{},
		},
	}
	// The criteria come from the header, the first line, and may be
	// replaced by criteria events later on; the window gap is the header's,
	// fixed before any result is read.
	crit := zdv1.Criteria{}
	var overrideErr error
	settle := func(c zdv1.Criteria) zdv1.Criteria {
		if o.override != nil {
			if err := ApplyOverrides(&c, *o.override); err != nil {
				overrideErr = err
			}
		}
		return c
	}
	crit = settle(crit)
	// Only a file that cannot be opened is an error; everything else is
	// evidence for the verdict.
	f, err := os.Open(path)
	if err != nil {
		return zdv1.Scenario{}, fmt.Errorf("analyze run file: %w", err)
	}
	_ = f.Close()
	n := 0
	stats, err := runfile.ReadFile(path, func(rec runfile.Record) error {
		if n++; n%8192 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("analysis of %s cancelled: %w", path, err)
			}
		}
		a.lastLine = rec.Line
		switch rec.Kind {
		case zdv1.KindMeta:
			if a.meta == nil {
				a.meta = rec.Header
				crit = settle(rec.Header.Scenario.Criteria)
				a.deliv = newDelivery(rec.Header.Load)
			}
		case zdv1.KindResult:
			a.seqs.add(rec.Result.Seq)
			if a.gap == 0 {
				a.gap = gapOf(crit).Nanoseconds()
			}
			a.addResult(rec.Result, crit)
		case zdv1.KindEvent:
			if e := rec.Event; e.Type == zdv1.EventCriteria && e.Source == zdv1.SourceHarness {
				var c zdv1.Criteria
				if err := json.Unmarshal([]byte(e.Fields[zdv1.CriteriaField]), &c); err != nil {
					a.criteriaErr = fmt.Errorf("criteria event on line %d: %w", rec.Line, err)
				} else {
					c.WindowGapMs = crit.WindowGapMs
					crit = settle(c)
				}
			}
			a.addEvent(*rec.Event)
		case zdv1.KindEnd:
			a.end = rec.End
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return zdv1.Scenario{}, err
		}
		a.readErr = err
	}
	a.truncated = stats.Truncated
	a.corrupt = stats.Corrupt
	a.chain = stats.Chain
	if a.gap == 0 {
		a.gap = gapOf(crit).Nanoseconds()
	}

	windows := a.windows()
	if len(windows) > 0 && a.readErr == nil {
		if err := a.countOKInWindows(ctx, path, windows, a.stillGround(crit)); err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return zdv1.Scenario{}, err
			}
			a.readErr = err
		}
	}
	if l := crit.ServedAfterRemoval; l != nil && a.readErr == nil {
		grace := time.Duration(l.GraceMs * float64(time.Millisecond))
		after, err := ServedAfterRemoval(ctx, path, l.Pod, grace)
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return zdv1.Scenario{}, err
			}
			a.readErr = err
		} else {
			a.afterRemoval = &zdv1.AfterRemoval{Pod: l.Pod, GraceMs: l.GraceMs, Served: after.Served,
				Reused: after.Reused, NewConnections: after.NewConnections}
			if !after.Removed.IsZero() {
				at := after.Removed.UTC()
				a.afterRemoval.EndpointRemoved = &at
			}
		}
	}
	slices.SortStableFunc(a.events, func(x, y zdv1.Event) int { return x.Time.Compare(y.Time) })
	for i := range windows {
		windows[i].NearestEvents = a.nearest(windows[i])
	}
	if crit.ExplainWithinMs != nil {
		within := time.Duration(*crit.ExplainWithinMs * float64(time.Millisecond))
		a.spans = lasting(a.events)
		a.explain(windows, within)
		a.limitOpens(windows, within, crit.LimitOpens)
	}

	sc := zdv1.Scenario{
		RunFile:        o.runFile,
		RunFileSHA256:  stats.SHA256,
		SkippedLines:   stats.Corrupt.Lines,
		Results:        a.results(crit, windows),
		FailureWindows: windows,
		Events:         []zdv1.Event{},
	}
	if a.meta != nil {
		sc.ScenarioSpec = a.meta.Scenario
		sc.RunID = a.meta.RunID
		sc.SigningKey = a.meta.SigningKey
		sc.Start = a.meta.Created
		if a.meta.Load != nil {
			sc.Load = *a.meta.Load
		}
	}
	if sc.Name == "" {
		sc.Name = o.runFile
	}
	if sc.Role == "" {
		sc.Role = zdv1.RoleAssertion
	}
	sc.Criteria = crit
	if o.override != nil {
		ov := *o.override
		sc.CriteriaOverrides = &ov
	}
	if overrideErr != nil && a.criteriaErr == nil {
		a.criteriaErr = overrideErr
	}
	if sc.Start.IsZero() && a.first != 0 {
		sc.Start = time.Unix(0, a.first).UTC()
	}
	switch {
	case a.end != nil:
		sc.End = a.end.Time
	case a.last != 0:
		sc.End = time.Unix(0, a.last).UTC()
	}
	for i, e := range a.events {
		if i >= o.maxEvents {
			break
		}
		sc.Events = append(sc.Events, reportEvent(e))
	}
	sc.EventsOmitted = int64(len(a.events)) - int64(len(sc.Events)) + a.eventsDropped
	sc.Verdict = evaluate(crit, a.problems(crit), sc.Results, windows, a.controls)
	return sc, nil
}

func gapOf(c zdv1.Criteria) time.Duration {
	if c.WindowGapMs > 0 {
		return time.Duration(c.WindowGapMs * float64(time.Millisecond))
	}
	return DefaultWindowGap
}

func (a *analysis) addResult(r *zdv1.Result, crit zdv1.Criteria) {
	// What the target answered names its pod, node and the client it saw:
	// a hostile target's names reach every report and terminal only as
	// text.
	r.Pod, r.Node, r.ClientIP = zdv1.SafeText(r.Pod), zdv1.SafeText(r.Node), zdv1.SafeText(r.ClientIP)
	r.ForwardedFor = zdv1.SafeText(r.ForwardedFor)
	a.res.Total++
	if a.deliv != nil {
		a.deliv.addResult(r)
	}
	if r.Retries > 0 {
		a.res.Retried++
	}
	t := r.Time.UnixNano()
	if a.first == 0 || t < a.first {
		a.first = t
	}
	if t > a.last {
		a.last = t
	}
	a.hist.add(r.Latency)
	if r.Status != 0 {
		a.res.StatusCodes[strconv.Itoa(r.Status)]++
	}
	if kind := r.FailureKind(); kind != "" {
		if r.Status == 0 || kind == zdv1.ClassRetried {
			a.res.Errors++
			a.res.ErrorClasses[kind]++
		} else {
			a.res.Non2xx++
		}
		key := t / a.gap
		s := a.slots[key]
		if s == nil {
			s = &slot{min: t, max: t, classes: map[string]int64{}}
			a.slots[key] = s
		}
		s.min, s.max = min(s.min, t), max(s.max, t)
		s.count++
		s.classes[kind]++
		return
	}
	a.res.OK++
	a.histOK.add(r.Latency)
	if r.Pod == "" {
		a.res.Unattributed++
	} else {
		p := a.pods[r.Pod]
		if p == nil {
			p = &podAgg{}
			a.pods[r.Pod] = p
		}
		p.count++
		if r.Node != "" {
			p.node = r.Node
		}
		reused := r.ConnRequest > 1
		if r.Ready != nil && !*r.Ready {
			p.unready++
			if reused {
				p.unreadyReused++
			}
		}
		if r.Draining != nil && *r.Draining {
			p.draining++
			if reused {
				p.drainReused++
			}
		}
	}
	if r.Node != "" {
		a.nodes[r.Node]++
	}
	// The client-IP criteria are applied at the end, from these counts: a
	// criteria event may set them after the first results.
	if r.ClientIP != "" {
		a.ips[r.ClientIP]++
	}
	if r.Pod != "" {
		a.xff[r.ForwardedFor]++
	}
}

func (a *analysis) addEvent(e zdv1.Event) {
	a.eventLines++
	if e.Type == zdv1.EventDisruption && e.Source == zdv1.SourceHarness && !e.Time.IsZero() {
		if t := e.Time.UnixNano(); a.disruption == 0 || t < a.disruption {
			a.disruption = t
		}
	}
	if e.Type == zdv1.EventControl && e.Source == zdv1.SourceHarness {
		a.controls = append(a.controls, e)
	}
	if e.Type == zdv1.EventUnsent && e.Source == zdv1.SourceLoad {
		if n, err := strconv.ParseInt(e.Fields["requests"], 10, 64); err == nil && n > 0 {
			a.unsent += n
		}
	}
	if a.deliv != nil {
		a.deliv.addEvent(e)
	}
	if len(a.events) >= maxRetainedEvents {
		a.eventsDropped++
		return
	}
	a.events = append(a.events, e)
}

func (a *analysis) windows() []zdv1.FailureWindow {
	keys := make([]int64, 0, len(a.slots))
	for k := range a.slots {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []zdv1.FailureWindow
	var cur *slot
	flush := func() {
		if cur == nil {
			return
		}
		out = append(out, zdv1.FailureWindow{
			Index:      len(out),
			Start:      time.Unix(0, cur.min).UTC(),
			End:        time.Unix(0, cur.max).UTC(),
			DurationMs: ms(cur.max - cur.min),
			Failed:     cur.count,
			Classes:    cur.classes,
		})
	}
	for _, k := range keys {
		s := a.slots[k]
		if cur != nil && s.min-cur.max < a.gap {
			cur.max = max(cur.max, s.max)
			cur.count += s.count
			for c, n := range s.classes {
				cur.classes[c] += n
			}
			continue
		}
		flush()
		cur = &slot{min: s.min, max: s.max, count: s.count, classes: copyCounts(s.classes)}
	}
	flush()
	if out == nil {
		out = []zdv1.FailureWindow{}
	}
	if n := len(out); n > 0 && cur.max == a.last {
		// Nothing was sent after the last window's last failure.
		out[n-1].OpenAtEnd = true
	}
	return out
}

func copyCounts(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// stillGround says whether a request sent at t (unix ns) was sent while
// nothing was being disrupted: anywhere in an undisturbed run, before the
// disruption event in a run that has one; nil when the run says neither.
func (a *analysis) stillGround(crit zdv1.Criteria) func(t int64) bool {
	switch {
	case crit.Undisturbed:
		return func(int64) bool { return true }
	case a.disruption != 0:
		at := a.disruption
		return func(t int64) bool { return t < at }
	}
	return nil
}

// countOKInWindows is a second streaming pass: requests sent inside a
// window that succeeded, which tells a partial outage from a total one,
// and the window's failures sent while the ground should have been still
// (still non-nil).
func (a *analysis) countOKInWindows(ctx context.Context, path string, ws []zdv1.FailureWindow, still func(t int64) bool) error {
	n := 0
	_, err := runfile.ReadFile(path, func(rec runfile.Record) error {
		if n++; n%8192 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("analysis of %s cancelled: %w", path, err)
			}
		}
		if rec.Result == nil {
			return nil
		}
		t := rec.Result.Time
		i := sort.Search(len(ws), func(i int) bool { return !ws[i].End.Before(t) })
		if i >= len(ws) || t.Before(ws[i].Start) {
			return nil
		}
		switch {
		case rec.Result.OK():
			ws[i].OK++
		case still != nil && rec.Result.FailureKind() != "" && still(failedAt(rec.Result).UnixNano()):
			ws[i].GroundMoved++
		}
		return nil
	})
	return err
}

// failedAt is when a failed request's failure is judged to have struck,
// for whether the ground had moved before the disruption: a request's send
// time, but a stream's or a WebSocket session's end. Those stay open for
// seconds by design, and one the disruption cut was served until it came.
func failedAt(r *zdv1.Result) time.Time {
	if r.WantMessages > 0 {
		return r.Time.Add(r.Latency)
	}
	return r.Time
}

// nearest returns the events closest to w: up to three before its start,
// those during it (up to twenty), up to three after its end.
func (a *analysis) nearest(w zdv1.FailureWindow) []zdv1.WindowEvent {
	ev := a.events
	lo := sort.Search(len(ev), func(i int) bool { return !ev[i].Time.Before(w.Start) })
	hi := sort.Search(len(ev), func(i int) bool { return ev[i].Time.After(w.End) })
	out := []zdv1.WindowEvent{}
	add := func(e zdv1.Event) {
		out = append(out, zdv1.WindowEvent{Event: reportEvent(e), OffsetMs: ms(e.Time.Sub(w.Start).Nanoseconds())})
	}
	// The load generator's own pauses explain stalls (the delivery
	// check), not failures: they must not crowd out what does.
	skip := func(e zdv1.Event) bool { return e.Type == zdv1.EventInstrumentPause }
	var before []zdv1.Event
	for i := lo - 1; i >= 0 && len(before) < nearestAround; i-- {
		if !skip(ev[i]) {
			before = append(before, ev[i])
		}
	}
	slices.Reverse(before)
	for _, e := range before {
		add(e)
	}
	n := 0
	for _, e := range ev[lo:hi] {
		if !skip(e) && n < nearestDuring {
			add(e)
			n++
		}
	}
	n = 0
	for _, e := range ev[hi:] {
		if n == nearestAround {
			break
		}
		if !skip(e) {
			add(e)
			n++
		}
	}
	return out
}

// explain marks the windows after the disruption began that no event of
// the disruption explains: none inside the window (or up to
// watchDelivery after its end) or within before its start
// (Criteria.ExplainWithinMs). The load generator's own events
// (load-start, unsent, instrument pauses) and the control's are not the
// disruption's. a.events is sorted by time. Past the last event kept
// (maxRetainedEvents) nothing is marked: the events that would explain it
// were not kept.
func (a *analysis) explain(ws []zdv1.FailureWindow, within time.Duration) {
	a.mark(ws, within, disruptionCause, func(w *zdv1.FailureWindow) { w.Unexplained = true })
}

// limitOpens marks, for a run documenting a platform limit, the windows
// after the disruption began that no event of a type in opens (the
// limit's mechanism, Criteria.LimitOpens) opens, within the same reach as
// explain.
func (a *analysis) limitOpens(ws []zdv1.FailureWindow, within time.Duration, opens []string) {
	if len(opens) == 0 {
		return
	}
	a.mark(ws, within, func(e zdv1.Event) bool { return e.Source != zdv1.SourceLoad && slices.Contains(opens, e.Type) },
		func(w *zdv1.FailureWindow) { w.OutsideLimit = true })
}

// mark calls unmet on every window after the disruption began with no
// event that cause accepts inside it (up to watchDelivery after its end)
// or within before its start, a lasting event (a.spans) counting for its
// whole stretch.
func (a *analysis) mark(ws []zdv1.FailureWindow, within time.Duration, cause func(zdv1.Event) bool, unmet func(*zdv1.FailureWindow)) {
	if a.disruption == 0 {
		return
	}
	ev := a.events
	var lastKept time.Time
	if len(ev) > 0 {
		lastKept = ev[len(ev)-1].Time
	}
	for i := range ws {
		w := &ws[i]
		if w.Start.UnixNano() < a.disruption || (a.eventsDropped > 0 && !w.Start.Before(lastKept)) {
			continue // before the disruption: the ground check's
		}
		from, to := w.Start.Add(-within), w.End.Add(watchDelivery)
		lo := sort.Search(len(ev), func(k int) bool { return !ev[k].Time.Before(from) })
		met := false
		for _, e := range ev[lo:] {
			if e.Time.After(to) {
				break
			}
			if cause(e) {
				met = true
				break
			}
		}
		for _, s := range a.spans {
			if met {
				break
			}
			met = !s.open.Time.After(to) && !s.until.Before(from) && cause(s.open)
		}
		if !met {
			unmet(w)
		}
	}
}

// span is an event that opens a state lasting until a later event.
type span struct {
	open  zdv1.Event
	until time.Time
}

// lasting returns the events of ev (sorted by time) that last: a
// machine's shutdown (EventNodeShutdown) goes on until the run saw that
// machine off (the next EventNodeOff of the same node). Everything on a
// machine that is shutting down may stop at any moment of it, in the order
// systemd stops its units, and a process that does not end on SIGTERM
// holds the machine, with its network and its routes, until systemd's
// stop timeout (DefaultTimeoutStopSec, 90 s; systemd-system.conf(5)): a
// window anywhere inside that stretch is the shutdown's, however long
// after its first event. A shutdown the run never saw end (the machine
// was killed instead) lasts no longer than its event.
func lasting(ev []zdv1.Event) []span {
	var out []span
	for i, e := range ev {
		if e.Source != zdv1.SourceHarness || e.Type != zdv1.EventNodeShutdown {
			continue
		}
		for _, off := range ev[i+1:] {
			if off.Source == zdv1.SourceHarness && off.Type == zdv1.EventNodeOff && off.Object == e.Object {
				out = append(out, span{open: e, until: off.Time})
				break
			}
		}
	}
	return out
}

// watchDelivery is how late an event may be stamped after the drops it
// caused: Kubernetes events are stamped when the watch delivers them,
// after the API server has already acted (the endpoint removed, the Pod
// deleted).
const watchDelivery = time.Second

// disruptionCause says whether e can be a cause of drops: an event of the
// cluster, the LB, the harness's steps or the user's, not the load
// generator's own bookkeeping or the control's.
func disruptionCause(e zdv1.Event) bool {
	switch e.Source {
	case zdv1.SourceLoad:
		return false
	case zdv1.SourceHarness:
		return e.Type != zdv1.EventControl && e.Type != zdv1.EventCriteria && e.Type != zdv1.EventInstrumentPause
	}
	return e.Type != zdv1.EventInstrumentPause
}

// reportEvent is e as the report shows it: what the cluster or the LB
// wrote in it (object names, messages, fields) only as text.
func reportEvent(e zdv1.Event) zdv1.Event {
	var fields map[string]string
	if e.Fields != nil {
		fields = make(map[string]string, len(e.Fields))
		for k, v := range e.Fields {
			fields[zdv1.SafeText(k)] = zdv1.SafeText(v)
		}
	}
	return zdv1.Event{Time: e.Time, Source: zdv1.SafeText(e.Source), Type: zdv1.SafeText(e.Type), Object: zdv1.SafeText(e.Object),
		Message: zdv1.SafeText(e.Message), Fields: fields}
}

func (a *analysis) results(crit zdv1.Criteria, ws []zdv1.FailureWindow) zdv1.Results {
	r := a.res
	r.Dropped = r.Errors + r.Non2xx
	if a.disruption != 0 {
		at := time.Unix(0, a.disruption).UTC()
		r.DisruptionStart = &at
	}
	for _, w := range ws {
		r.GroundMoved += w.GroundMoved
	}
	r.Delivery = a.deliv.report()
	r.Latency = a.hist.summary()
	r.LatencyOK = a.histOK.summary()
	if a.first != 0 {
		r.FirstSend = time.Unix(0, a.first).UTC()
		r.LastSend = time.Unix(0, a.last).UTC()
		if d := a.last - a.first; d > 0 && r.Total > 1 {
			// Total-1 intervals between Total sends.
			r.AchievedRate = float64(r.Total-1) / (float64(d) / 1e9)
		}
	}
	attributed := r.OK - r.Unattributed
	share := func(n int64) float64 {
		if attributed <= 0 {
			return 0
		}
		return float64(n) / float64(attributed)
	}
	r.Pods = []zdv1.PodCount{}
	for name, p := range a.pods {
		r.Pods = append(r.Pods, zdv1.PodCount{
			Pod: name, Node: p.node, Count: p.count, Share: share(p.count),
			ServedUnready: p.unready, ServedUnreadyReused: p.unreadyReused,
			ServedDraining: p.draining, ServedDrainingReused: p.drainReused,
		})
		r.ServedUnready += p.unready
		r.ServedUnreadyReused += p.unreadyReused
		r.ServedDraining += p.draining
		r.ServedDrainingReused += p.drainReused
	}
	seen := map[string]bool{}
	for _, p := range r.Pods {
		seen[p.Pod] = true
	}
	r.ZeroTrafficPods = []string{}
	for _, name := range crit.ExpectedPods {
		if !seen[name] {
			seen[name] = true
			r.ZeroTrafficPods = append(r.ZeroTrafficPods, name)
			r.Pods = append(r.Pods, zdv1.PodCount{Pod: name})
		}
	}
	slices.SortFunc(r.Pods, func(x, y zdv1.PodCount) int { return cmpString(x.Pod, y.Pod) })
	slices.Sort(r.ZeroTrafficPods)
	r.Nodes = counts(a.nodes, share)
	r.ClientIPs = counts(a.ips, share)
	r.ExpectedClientIP = crit.ExpectedClientIP
	if crit.ExpectedClientIP != "" {
		for ip, n := range a.ips {
			if ip != crit.ExpectedClientIP {
				r.ClientIPMismatches += n
			}
		}
	}
	r.ForwardedClientIP = crit.ForwardedClientIP
	headers := map[string]int64{}
	for h, n := range a.xff {
		if h != "" {
			headers[h] = n
		}
		if crit.ForwardedClientIP != "" && !forwardedFrom(h, crit.ForwardedClientIP) {
			r.ForwardedMismatches += n
		}
	}
	if len(headers) > 0 {
		r.ForwardedFor = counts(headers, share)
	}
	r.AfterRemoval = a.afterRemoval
	return r
}

// forwardedFrom reports whether the X-Forwarded-For header h names ip as
// one of its entries. Proxies append differently (AWS's ALB the client's
// address, docs.aws.amazon.com/elasticloadbalancing/latest/application/
// x-forwarded-headers.html "Append"; Oracle's LB its last peer,
// docs.oracle.com/en-us/iaas/Content/Balance/Reference/httpheaders.htm;
// Google's front ends the client's and then the LB's own,
// cloud.google.com/load-balancing/docs/https "X-Forwarded-For header"), so
// the client is an entry, not always the first or the last. The load
// generator sends no such header, so an entry with its address was written
// by a proxy.
func forwardedFrom(h, ip string) bool {
	for part := range strings.SplitSeq(h, ",") {
		if strings.TrimSpace(part) == ip {
			return true
		}
	}
	return false
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func counts(m map[string]int64, share func(int64) float64) []zdv1.Count {
	out := make([]zdv1.Count, 0, len(m))
	for k, v := range m {
		out = append(out, zdv1.Count{Name: k, Count: v, Share: share(v)})
	}
	slices.SortFunc(out, func(x, y zdv1.Count) int { return cmpString(x.Name, y.Name) })
	return out
}

// problems lists what makes the run itself unfit to judge.
func (a *analysis) problems(crit zdv1.Criteria) []string {
	var p []string
	if a.readErr != nil {
		p = append(p, fmt.Sprintf("run file unreadable after line %d: %v", a.lastLine, a.readErr))
	}
	if a.meta == nil {
		p = append(p, "run file has no meta line: not a zerodrop run file, or it was cut off before anything was written")
	} else if a.meta.Schema != zdv1.RunFileSchema {
		p = append(p, fmt.Sprintf("run file schema %q is not %q", a.meta.Schema, zdv1.RunFileSchema))
	} else if a.deliv == nil {
		p = append(p, "run file's header has no load settings (rate): whether the load generator delivered its load cannot be judged")
	}
	if a.criteriaErr != nil {
		p = append(p, "run file's criteria cannot be read, so the run cannot be judged: "+a.criteriaErr.Error())
	}
	if a.truncated {
		p = append(p, fmt.Sprintf("run file's last line (%d) is cut off: the run was killed while writing", a.lastLine+1))
	}
	if c := a.corrupt; c.Lines > 0 {
		p = append(p, fmt.Sprintf("%d line(s) of the run file could not be read and were skipped (first: line %d, %s); "+
			"the figures are from the other lines, but what the skipped lines held was not measured", c.Lines, c.First, c.FirstError))
	}
	if a.end == nil {
		p = append(p, fmt.Sprintf("run file has no end line: the run was cut short after %d results", a.res.Total))
	} else if a.end.Error != "" {
		p = append(p, "the run reported an error: "+a.end.Error)
	}
	p = append(p, a.integrity()...)
	if a.res.Total > 0 && len(a.res.StatusCodes) == 0 {
		// Not a measured outage but no measurement: the address, the port
		// or the LB never worked, so nothing about a disruption was seen.
		p = append(p, fmt.Sprintf("the target never answered: none of %d requests got an HTTP response (%s); "+
			"check the address and port and that the load balancer serves before the disruption starts",
			a.res.Total, classText(a.res.ErrorClasses)))
	}
	minReq := max(crit.MinRequests, 1)
	if a.res.Total < minReq {
		p = append(p, fmt.Sprintf("only %d results, need at least %d to judge the run", a.res.Total, minReq))
	}
	return p
}

// integrity is what the run file's own bookkeeping says is missing or
// doubled: the end line counts the result and event lines the writer
// wrote, and the load generator numbers every request it was due to send
// (sent, or counted in an unsent event), so a line taken out or copied in
// shows. A run file that does not hold what it says it holds cannot be
// judged.
func (a *analysis) integrity() []string {
	var p []string
	if e := a.end; e != nil && a.corrupt.Lines == 0 && !a.truncated {
		if e.Results != a.res.Total {
			p = append(p, fmt.Sprintf("the run file holds %d result lines, but its end line says %d were written: "+
				"lines were removed or added after the run", a.res.Total, e.Results))
		}
		if e.Events != a.eventLines {
			p = append(p, fmt.Sprintf("the run file holds %d event lines, but its end line says %d were written: "+
				"lines were removed or added after the run", a.eventLines, e.Events))
		}
	}
	if e := a.end; e != nil && e.Chain != "" && a.chain != "" && e.Chain != a.chain {
		// Counts and request numbers can be kept consistent by hand; the
		// chain changes with any byte of any line before the end line.
		p = append(p, fmt.Sprintf("the hash chain over the run file's lines ends at %.12s…, but its end line says %.12s…: "+
			"a line was changed, removed, added or moved after the run", a.chain, e.Chain))
	}
	s := a.seqs
	if s.repeats > 0 {
		p = append(p, fmt.Sprintf("%d result lines repeat a request number another line has: a request is counted once", s.repeats))
	}
	if s.tooLarge > 0 {
		p = append(p, fmt.Sprintf("%d result lines carry a request number of %d or more, beyond any run this tool writes", s.tooLarge, maxSeqs))
	}
	if s.distinct > 0 && a.deliv != nil {
		// Every number up to the highest is a result or an unsent request;
		// requests due after the last one sent may be unsent too, so only
		// a shortfall is a hole.
		if holes := int64(s.max) + 1 - s.distinct - a.unsent; holes > 0 {
			p = append(p, fmt.Sprintf("%d of the request numbers 0-%d are neither a result nor an unsent request: "+
				"result lines are missing", holes, s.max))
		}
	}
	return p
}

// BuildReport analyzes each run file into one scenario of a report with the
// given run metadata; Start and End are widened to cover every scenario.
// opts apply to every file. An error means a run file could not be opened.
func BuildReport(ctx context.Context, run zdv1.RunMeta, runFiles []string, opts ...Option) (*zdv1.Report, error) {
	rep := zdv1.New(run)
	for _, path := range runFiles {
		sc, err := AnalyzeFile(ctx, path, opts...)
		if err != nil {
			return nil, err
		}
		rep.Scenarios = append(rep.Scenarios, sc)
		if rep.Run.Start.IsZero() || (!sc.Start.IsZero() && sc.Start.Before(rep.Run.Start)) {
			rep.Run.Start = sc.Start
		}
		if sc.End.After(rep.Run.End) {
			rep.Run.End = sc.End
		}
	}
	rep.Summarize()
	return rep, nil
}

// classText is "refused 40, timeout 2", largest first.
func classText(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y string) int {
		if m[x] != m[y] {
			return cmp.Compare(m[y], m[x])
		}
		return strings.Compare(x, y)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
